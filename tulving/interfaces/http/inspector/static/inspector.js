// The Tulving inspector: a client of the /v1 API like any other, with the caller's own
// token, so it sees exactly what that token may see. Every piece of memory text is put in
// the page with textContent (never as HTML): stored content is untrusted.

const TYPES = ["FACT", "DECISION", "OBSERVATION", "PLAN", "SUMMARY", "PREFERENCE",
  "PROCEDURE", "EPISODE"];
const SCOPES = ["agent", "session", "personal", "shared", "workspace", "model_specific"];
const main = document.getElementById("main");
const status = document.getElementById("status");

// ---- talking to the server ------------------------------------------------------------
function credentials() {
  return { token: sessionStorage.getItem("tulving.token") || "",
    agent: sessionStorage.getItem("tulving.agent") || "" };
}

class ApiError extends Error {
  constructor(status, kind, message) { super(message); this.status = status; this.kind = kind; }
}

async function api(method, path, { query = {}, body } = {}) {
  const { token, agent } = credentials();
  if (!token) throw new ApiError(401, "Unauthorized", "enter an access token first");
  const url = new URL("../v1" + path, location.href);
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === "") continue;
    for (const item of Array.isArray(v) ? v : [v]) url.searchParams.append(k, item);
  }
  const init = { method, headers: { Authorization: `Bearer ${token}` } };
  if (agent) {
    if (body) body = { agent_id: agent, ...body }; else url.searchParams.set("agent_id", agent);
  }
  if (body) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const err = data.error || {};
    throw new ApiError(response.status, err.type || "Error", err.message || response.statusText);
  }
  return data;
}

// ---- building the page ----------------------------------------------------------------
function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// replaceChildren with nested lists and absent (null/false) parts allowed, like h().
function put(target, ...children) {
  target.replaceChildren(...children.flat(Infinity)
    .filter((c) => c !== null && c !== undefined && c !== false));
}

const fmt = (n, digits = 3) => (typeof n === "number" ? n.toFixed(digits) : "");
const day = (iso) => (iso ? iso.slice(0, 10) : "");
const memoryLink = (id, label) => h("a", { href: `#/memory/${encodeURIComponent(id)}` },
  label || id);

function say(message) { status.textContent = message; }

function showError(err) {
  say("");
  put(main, h("p", { class: "error", role: "alert" },
    `${err.kind || "Error"} (${err.status || "?"}): ${err.message}`));
}

function field(label, control) { return h("label", {}, label, control); }

function select(name, options, value, { any = "any" } = {}) {
  return h("select", { name },
    any !== null ? h("option", { value: "" }, any) : null,
    options.map((o) => h("option", { value: o, selected: o === value }, o.toLowerCase())));
}

function table(headers, rows, { caption } = {}) {
  return h("table", {}, caption ? h("caption", { class: "muted" }, caption) : null,
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows));
}

function confirmAction(text) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });
}

// ---- curate preview -------------------------------------------------------------------
async function curateView(params) {
  const budget = params.get("budget") || "500";
  const form = h("form", { class: "controls", id: "curate-form" },
    field("Query", h("input", { name: "query", type: "search", size: 40,
      value: params.get("query") || "", id: "curate-query" })),
    field(h("span", {}, "Budget: ", h("output", { id: "budget-out" }, budget), " tokens"),
      h("input", { name: "budget", type: "range", min: 50, max: 8000, step: 50, value: budget,
        id: "budget", "aria-describedby": "budget-out" })),
    field("Mode", select("mode", ["query", "orient"], params.get("mode") || "query",
      { any: null })),
    h("button", { type: "submit" }, "Curate"));
  const result = h("section", { id: "curate-result", "aria-label": "Curated result" });
  put(main, h("h2", {}, "Curate preview"), form, result);
  let timer;
  const run = async () => {
    const data = new FormData(form);
    const mode = data.get("mode");
    const query = (data.get("query") || "").trim();
    if (mode === "query" && !query) {
      put(result, h("p", { class: "muted" },
        "Type a query (or pick orient mode) and see what curate() puts in the prompt."));
      return;
    }
    const body = { token_budget: Number(data.get("budget")), mode, explain: true };
    if (mode === "query") body.query = query;
    say("Curating…");
    const started = performance.now();
    try {
      const { curated } = await api("POST", "/curate", { body });
      renderCurated(result, curated, performance.now() - started);
      say(`Curated in ${Math.round(performance.now() - started)} ms.`);
    } catch (err) { put(result, h("p", { class: "error", role: "alert" }, err.message)); say(""); }
  };
  form.addEventListener("submit", (e) => { e.preventDefault(); run(); });
  form.budget.addEventListener("input", () => {
    document.getElementById("budget-out").textContent = form.budget.value;
    clearTimeout(timer);
    timer = setTimeout(run, 200);
  });
  form.mode.addEventListener("change", run);
  await run();
}

function renderCurated(target, curated, ms) {
  const candidates = curated.candidates || [];
  const totals = {};
  for (const c of candidates) {
    const t = (totals[c.disclosure] ||= { n: 0, tokens: 0 });
    t.n += 1;
    if (c.disclosure !== "left out") t.tokens += c.tokens;
  }
  const summary = h("p", { id: "curate-summary" },
    `${curated.token_count} of ${curated.token_budget} tokens used · `,
    `${(curated.entries || []).length} shown · ${curated.sources_consulted} consulted · `,
    Object.entries(totals).map(([k, t]) => `${k}: ${t.n}` + (k === "left out" ? "" : ` (${t.tokens} tokens)`)).join(" · "));
  const meter = h("meter", { class: "meter", min: 0, max: curated.token_budget,
    value: curated.token_count, "aria-label": "Budget used" });
  const rows = candidates.map((c, i) => h("tr", { class: c.disclosure === "left out" ? "left-out" : "" },
    h("td", { class: "num" }, i + 1),
    h("td", {}, memoryLink(c.entry_id, c.key || c.entry_id), h("div", { class: "muted" }, c.preview)),
    h("td", {}, c.type.toLowerCase()),
    h("td", { class: "num" }, fmt(c.score)), h("td", { class: "num" }, fmt(c.relevance)),
    h("td", { class: "num" }, fmt(c.recency)), h("td", { class: "num" }, fmt(c.importance)),
    h("td", { class: "num" }, fmt(c.frequency)), h("td", { class: "num" }, fmt(c.type_prior)),
    h("td", { class: "num" }, fmt(c.trust)),
    h("td", { class: "disclosure" }, c.disclosure + (c.reason ? ` (${c.reason})` : ""),
      curated.mode === "orient" ? h("div", { class: "muted" }, c.section) : null),
    h("td", { class: "num" }, c.tokens)));
  put(target, summary, meter, h("div", { class: "split" },
    h("div", {}, h("h3", {}, "The block curate() returns"),
      h("pre", { class: "block", id: "curated-block", tabindex: 0 }, curated.content)),
    h("div", { class: "scroll" }, h("h3", {}, "Every candidate, best first"),
      candidates.length ? table(["#", "Memory", "Type", "Score", "Relevance", "Recency",
        "Importance", "Frequency", "Type prior", "Trust", "Disclosure", "Tokens"], rows,
      { caption: `${candidates.length} candidates; a left-out one shows what its full line would cost` })
        : h("p", { class: "muted" }, "No candidates."))));
}

// ---- browse and search ----------------------------------------------------------------
async function browseView(params) {
  const form = h("form", { class: "controls", id: "browse-form" },
    field("Search", h("input", { name: "query", type: "search", size: 30, value: params.get("query") || "" })),
    field("Mode", select("mode", ["hybrid", "lexical", "semantic", "key"], params.get("mode") || "hybrid", { any: null })),
    field("Type", select("type", TYPES, params.get("type"))),
    field("Tag", h("input", { name: "tag", size: 10, value: params.get("tag") || "" })),
    field("Scope", select("scope", SCOPES, params.get("scope"))),
    field("Event time from", h("input", { name: "since", type: "date", value: params.get("since") || "" })),
    field("to", h("input", { name: "until", type: "date", value: params.get("until") || "" })),
    field(h("span", {}, "Archived too"), h("input", { name: "archived", type: "checkbox", checked: params.get("archived") === "1" })),
    h("button", { type: "submit" }, "Show"));
  const out = h("section", { id: "browse-result", "aria-label": "Memories" });
  put(main, h("h2", {}, "Browse and search"), form, out);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const next = new URLSearchParams();
    for (const k of ["query", "mode", "type", "tag", "scope", "since", "until"]) if (data.get(k)) next.set(k, data.get(k));
    if (data.get("archived")) next.set("archived", "1");
    location.hash = "#/browse?" + next.toString();
  });
  const query = (params.get("query") || "").trim();
  const since = params.get("since") ? params.get("since") + "T00:00:00Z" : undefined;
  const until = params.get("until") ? params.get("until") + "T23:59:59Z" : undefined;
  try {
    if (query) {
      say("Searching…");
      const { results } = await api("POST", "/search", { body: {
        query, mode: params.get("mode") || "hybrid", top_k: 50,
        types: params.get("type") ? [params.get("type")] : undefined,
        tags: params.get("tag") ? [params.get("tag")] : undefined, since, until } });
      const scope = params.get("scope");
      const kept = results.filter((r) => !scope || r.scope === scope);
      put(out, entryTable(kept, { scored: true }));
      say(`${kept.length} results.`);
    } else {
      await pagedEntries(out, { type: params.get("type"), tag: params.get("tag"),
        scope: params.get("scope"), since, until,
        include_archived: params.get("archived") === "1" ? "true" : undefined });
    }
  } catch (err) { showError(err); }
}

async function pagedEntries(out, filters) {
  const cursors = [null];
  const load = async (index) => {
    say("Loading…");
    const page = await api("GET", "/entries", { query: { ...filters, limit: 50, cursor: cursors[index] } });
    if (page.next_cursor) cursors[index + 1] = page.next_cursor;
    const pager = h("div", { class: "pager" },
      h("button", { type: "button", disabled: index === 0, onclick: () => load(index - 1) }, "Previous page"),
      h("span", {}, `Page ${index + 1}`),
      h("button", { type: "button", disabled: !page.next_cursor, onclick: () => load(index + 1) }, "Next page"));
    put(out, entryTable(page.entries, { scored: false }), pager);
    say(`${page.entries.length} memories on this page (oldest first).`);
  };
  await load(0);
}

function entryTable(entries, { scored }) {
  if (!entries.length) return h("p", { class: "muted" }, "No memories.");
  const headers = ["Memory", "Type", "Scope", "Event time", "Tags", "Content"];
  if (scored) headers.splice(1, 0, "Match", "Score");
  return table(headers, entries.map((e) => h("tr", {},
    h("td", {}, memoryLink(e.id, e.key || e.id), e.archived_at ? h("div", {}, `archived (${e.archive_reason})`) : null,
      e.pinned ? h("div", {}, "pinned") : null),
    scored ? [h("td", {}, e.match_type), h("td", { class: "num" }, fmt(e.score))] : null,
    h("td", {}, e.type.toLowerCase()), h("td", {}, e.scope), h("td", {}, day(e.valid_from)),
    h("td", {}, (e.tags || []).join(", ")), h("td", {}, e.content.length > 200 ? e.content.slice(0, 199) + "…" : e.content))));
}

// ---- one memory -------------------------------------------------------------------------
async function memoryView(id) {
  say("Loading memory…");
  const { entry } = await api("GET", `/memory/${encodeURIComponent(id)}`, { query: { include_archived: "true" } });
  const [history, audit] = await Promise.all([
    api("GET", `/memory/${encodeURIComponent(id)}/history`).catch(() => ({ versions: [entry] })),
    api("GET", `/memory/${encodeURIComponent(id)}/audit`).catch((err) => ({ records: [], error: err.message }))]);
  const shown = ["id", "type", "key", "scope", "agent_id", "session_id", "source_type", "importance",
    "pinned", "trust", "confidence", "review_status", "access_count", "valid_from", "valid_until",
    "created_at", "archived_at", "archive_reason", "entity", "attribute", "value"];
  const facts = h("dl", { class: "fields", id: "memory-fields" }, shown.filter((k) => entry[k] !== null && entry[k] !== undefined && entry[k] !== "")
    .map((k) => [h("dt", {}, k), h("dd", {}, String(entry[k]))]),
    entry.tags.length ? [h("dt", {}, "tags"), h("dd", {}, entry.tags.join(", "))] : null);
  const links = [];
  for (const [label, ids] of [["supersedes", entry.supersedes ? [entry.supersedes] : []],
    ["superseded by", entry.superseded_by ? [entry.superseded_by] : []],
    ["sources", entry.source_entry_ids], ["related", entry.related_to], ["conflicts", entry.conflict_ids]]) {
    if (ids && ids.length) links.push(h("li", {}, `${label}: `, ids.map((x, i) => [i ? ", " : "", memoryLink(x)])));
  }
  const actions = h("div", { class: "actions" });
  if (!entry.archived_at) {
    actions.append(
      h("button", { type: "button", id: "forget", onclick: () => forget(entry) }, "Forget…"),
      h("button", { type: "button", id: "pin", onclick: () => pin(entry) }, entry.pinned ? "Unpin…" : "Pin…"),
      h("button", { type: "button", id: "correct", onclick: () => correct(entry) }, "Correct…"));
  }
  const versions = history.versions.map((v) => h("li", {},
    v.id === entry.id ? h("strong", {}, "this version") : memoryLink(v.id),
    ` · ${day(v.created_at)} · ${v.archived_at ? "archived (" + v.archive_reason + ")" : "current"} · `,
    v.content.length > 120 ? v.content.slice(0, 119) + "…" : v.content));
  const rows = audit.records.map((r) => h("tr", {}, h("td", { class: "num" }, r.seq), h("td", {}, r.at),
    h("td", {}, r.actor), h("td", {}, r.action), h("td", {}, JSON.stringify(r.details))));
  put(main,
    h("h2", {}, `Memory ${entry.key || entry.id}`),
    entry.archived_at ? h("p", { id: "archived-note" }, `Archived (${entry.archive_reason}) at ${entry.archived_at}.`) : null,
    h("pre", { class: "block", id: "memory-content" }, entry.content),
    actions, facts,
    links.length ? [h("h3", {}, "Linked memories"), h("ul", {}, links)] : null,
    h("h3", {}, "History (supersede chain, newest first)"), h("ol", { id: "history" }, versions),
    h("h3", {}, "Audit records"),
    audit.error ? h("p", { class: "muted" }, audit.error) : rows.length
      ? table(["Seq", "At", "Actor", "Action", "Details"], rows, { caption: audit.total > rows.length ? `last ${rows.length} of ${audit.total}` : undefined })
      : h("p", { class: "muted" }, "No audit records name this memory."));
  say("");
}

async function act(question, call, doneMessage) {
  if (!(await confirmAction(question))) { say("Cancelled."); return; }
  try {
    const data = await call();
    say(doneMessage);
    return data;
  } catch (err) { say(`Failed: ${err.message}`); }
}

async function forget(entry) {
  const done = await act(`Forget memory ${entry.key || entry.id}? It is archived (reason: forgotten) and leaves search and curate.`,
    () => api("DELETE", `/forget/${encodeURIComponent(entry.id)}`), "Forgotten.");
  if (done) await memoryView(entry.id);
}

async function pin(entry) {
  const done = await act(`${entry.pinned ? "Unpin" : "Pin"} memory ${entry.key || entry.id}? This writes a new version.`,
    () => api("POST", "/correct", { body: { memory_id: entry.id, content: entry.content, pinned: !entry.pinned } }),
    entry.pinned ? "Unpinned." : "Pinned.");
  if (done) location.hash = `#/memory/${encodeURIComponent(done.corrected.id)}`;
}

async function correct(entry) {
  const text = prompt("Corrected content", entry.content);
  if (!text || text === entry.content) return;
  const done = await act(`Replace the content of ${entry.key || entry.id}? The current version is kept in history.`,
    () => api("POST", "/correct", { body: { memory_id: entry.id, content: text } }), "Corrected.");
  if (done) location.hash = `#/memory/${encodeURIComponent(done.corrected.id)}`;
}

// ---- timeline -------------------------------------------------------------------------
async function timelineView(params) {
  const by = params.get("by") || "day";
  const form = h("form", { class: "controls", id: "timeline-form" },
    field("Event time from", h("input", { name: "since", type: "date", value: params.get("since") || "" })),
    field("to", h("input", { name: "until", type: "date", value: params.get("until") || "" })),
    field("Type", select("type", TYPES, params.get("type"))),
    field("Group by", select("by", ["day", "session"], by, { any: null })),
    h("button", { type: "submit" }, "Show"));
  const out = h("section", { id: "timeline", "aria-label": "Timeline" });
  const more = h("button", { type: "button", id: "more" }, "Load more");
  put(main, h("h2", {}, "Timeline"), form, out, more);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const next = new URLSearchParams([...new FormData(form)].filter(([, v]) => v));
    location.hash = "#/timeline?" + next.toString();
  });
  const loaded = [];
  let cursor = null;
  const filters = { type: params.get("type"),
    since: params.get("since") ? params.get("since") + "T00:00:00Z" : undefined,
    until: params.get("until") ? params.get("until") + "T23:59:59Z" : undefined };
  const load = async () => {
    say("Loading…");
    try {
      const page = await api("GET", "/entries", { query: { ...filters, limit: 200, cursor } });
      loaded.push(...page.entries);
      cursor = page.next_cursor;
      more.disabled = !cursor;
      renderTimeline(out, loaded, by);
      say(`${loaded.length} memories loaded${cursor ? "; more with Load more" : ""}.`);
    } catch (err) { showError(err); }
  };
  more.addEventListener("click", load);
  await load();
}

function renderTimeline(out, entries, by) {
  const groups = new Map();
  const keyOf = (e) => (by === "session" ? e.session_id || "no session" : day(e.valid_from));
  for (const e of [...entries].sort((a, b) => (b.valid_from < a.valid_from ? -1 : b.valid_from > a.valid_from ? 1 : 0))) {
    if (!groups.has(keyOf(e))) groups.set(keyOf(e), []);
    groups.get(keyOf(e)).push(e);
  }
  put(out, ...[...groups].map(([name, items]) => {
    const summaries = items.filter((e) => e.type === "SUMMARY");
    const rest = items.filter((e) => e.type !== "SUMMARY");
    return h("section", { class: "group" },
      h("h3", {}, by === "session" ? `Session ${name}` : name, ` (${items.length})`),
      summaries.map((s) => h("p", { class: "summary" }, h("strong", {}, "Summary: "), memoryLink(s.id, s.content))),
      h("ul", {}, rest.map((e) => h("li", {}, `${e.valid_from.slice(11, 16)} `,
        h("span", {}, `[${e.type.toLowerCase()}] `), memoryLink(e.id, e.key || e.content.slice(0, 100))))));
  }));
}

// ---- profile ----------------------------------------------------------------------------
// The same profile as memory.profile(), MCP memory_profile and the briefing's first
// section: every item with its type, date, evidence and a link to the memory.
async function profileView(params) {
  const subject = params.get("subject") || "user";
  const form = h("form", { class: "controls", id: "profile-form" },
    field("Subject", h("input", { name: "subject", size: 20, value: subject })),
    h("button", { type: "submit" }, "Show"));
  const out = h("section", { id: "profile-result", "aria-label": "Profile" });
  put(main, h("h2", {}, "What is known"), form, out);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = "#/profile?" + new URLSearchParams({ subject: new FormData(form).get("subject") || "user" });
  });
  say("Loading profile…");
  const { profile } = await api("GET", "/profile", { query: { subject } });
  const items = profile.items || [];
  put(out, items.length ? table(["Memory", "Type", "Since", "Said", "Content"], items.map((i) => h("tr", {},
    h("td", {}, memoryLink(i.id, i.id), i.pinned ? h("div", {}, "pinned") : null, i.disputed ? h("div", {}, "disputed") : null),
    h("td", {}, i.type), h("td", {}, day(i.since)),
    h("td", { class: "num" }, i.evidence > 1 ? `${i.evidence}× (last ${day(i.last_seen)})` : "once"),
    h("td", {}, i.content))), { caption: `What is known about ${profile.subject}` })
    : h("p", { class: "muted" }, `Nothing is known about ${profile.subject} yet.`));
  say(`${items.length} items known about ${profile.subject}.`);
}

// ---- background work (what derives from the writes and is not written yet) -------------
async function showBacklog() {
  const node = document.getElementById("backlog");
  try {
    const { stats } = await api("GET", "/stats");
    const report = stats.enrichment || { tasks: {} };
    const parts = Object.entries(report.tasks).flatMap(([kind, b]) =>
      ["pending", "running", "failed"].filter((state) => b[state])
        .map((state) => `${kind} ${b[state]} ${state}`));
    node.textContent = "Background work: " + (parts.join(", ") || "none left");
  } catch { node.textContent = ""; }
}

// ---- routing --------------------------------------------------------------------------
async function route() {
  const [path, search] = location.hash.slice(1).split("?");
  const params = new URLSearchParams(search || "");
  const parts = (path || "/curate").split("/").filter(Boolean);
  const view = parts[0] || "curate";
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.view === view) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (!credentials().token) {
    put(main, h("p", {}, "Enter an access token above to inspect this memory."));
    document.getElementById("token").focus();
    return;
  }
  showBacklog();
  try {
    if (view === "memory" && parts[1]) await memoryView(decodeURIComponent(parts.slice(1).join("/")));
    else if (view === "browse") await browseView(params);
    else if (view === "timeline") await timelineView(params);
    else if (view === "profile") await profileView(params);
    else await curateView(params);
  } catch (err) { showError(err); }
}

document.getElementById("login").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem("tulving.token", document.getElementById("token").value.trim());
  sessionStorage.setItem("tulving.agent", document.getElementById("agent").value.trim());
  document.getElementById("token").value = "";
  say("Token set for this tab.");
  route();
});
document.getElementById("logout").addEventListener("click", () => {
  sessionStorage.removeItem("tulving.token");
  sessionStorage.removeItem("tulving.agent");
  say("Token forgotten.");
  route();
});
document.getElementById("agent").value = credentials().agent;
window.addEventListener("hashchange", route);
route();
