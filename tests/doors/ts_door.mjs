// The TypeScript client as a door of the property suites (tests/doors/http_doors.py):
// one JSON command a line on stdin, {"op", "args"}; one JSON answer a line on stdout,
// {"ok": true, "result"} or {"ok": false, "status", "kind", "message"} (status null: the
// client threw something that is not its TulvingError).
// Usage: node ts_door.mjs <client module URL> <base URL> <token> <agent id>
import { createInterface } from "node:readline";

const [, , modulePath, baseUrl, token, agentId] = process.argv;
const { TulvingClient, TulvingError } = await import(modulePath);
const client = new TulvingClient(baseUrl, token, { agentId, retries: 0 });

const storeOptions = (a) => {
  const { content: _c, type: _t, extra, ...rest } = a;
  for (const k of Object.keys(rest)) if (rest[k] === null) delete rest[k];
  return { ...rest, ...(extra ?? {}) };
};
const defined = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v != null));

const OPS = {
  store: (a) => client.store(a.content, a.type ?? "FACT", storeOptions(a)),
  get: (a) => client.get(a.id_or_key),
  forget: (a) => client.forget(a.id_or_key, { hard: !!a.hard }),
  correct: (a) => client.correct(a.id_or_key, a.content, a.reason ?? undefined),
  history: (a) => client.history(a.id_or_key),
  search: (a) => client.search(a.query, { ...defined({ top_k: a.top_k, tags: a.tags,
    since: a.since, mode: a.mode }), ...(a.extra ?? {}) }),
  curate: (a) => client.curate(a.query ?? null, defined({ token_budget: a.token_budget,
    mode: a.mode })),
  list_keys: (a) => client.listKeys(a.prefix ?? ""),
  list_entries: () => client.listEntries({ limit: 1000 }),
  stats: () => client.stats(),
  profile: (a) => client.profile(a.subject ?? "user"),
  remember: (a) => client.remember(a.text),
  start_session: (a) => client.startSession(a.goal ?? undefined),
  consolidate: (a) => client.consolidate({ apply: a.apply }),
  import_bundle: (a) => client.importBundle(new Uint8Array(Buffer.from(a.bundle, "base64")),
    { dryRun: a.dry_run }),
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const { op, args } = JSON.parse(line);
  let answer;
  try {
    const run = OPS[op];
    if (run === undefined) throw new Error(`no operation ${op}`);
    answer = { ok: true, result: await run(args) };
  } catch (error) {
    answer = error instanceof TulvingError
      ? { ok: false, status: error.status, kind: error.kind, message: error.message }
      : { ok: false, status: null, kind: error?.name ?? "Error", message: String(error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
