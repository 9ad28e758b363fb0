/**
 * The TypeScript client against a real `tulving serve` started here on 127.0.0.1 (the
 * Python in TULVING_PYTHON, else python3), with two tenants' tokens.
 */
import { strict as assert } from "node:assert";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { OPERATIONS, TulvingClient, TulvingError } from "../src/index.js";

const PYTHON = process.env.TULVING_PYTHON ?? "python3";
const FAST = ["--embedder", "hashing", "--vectors", "exact"];
const folder = mkdtempSync(join(tmpdir(), "tulving-ts-"));
const store = join(folder, "server.db");
let server: ChildProcess;
let baseUrl = "";
const tokens: Record<string, string> = {};

function cli(...args: string[]): string {
  const run = spawnSync(PYTHON, ["-m", "tulving.interfaces.cli.main", ...args], {
    encoding: "utf8", env: { ...process.env, TULVING_PLUGINS: "tulving" },
  });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

before(async () => {
  for (const [name, user] of [["alice", "u1"], ["bob", "u2"]]) {
    const out = cli("serve", "token", "create", name, "--bind-user", user, "--path", store,
      ...FAST, "--json");
    tokens[name] = JSON.parse(out).token;
  }
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  server = spawn(PYTHON, ["-m", "tulving.interfaces.cli.main", "serve", "--path", store,
    ...FAST, "--port", String(port)], {
    env: { ...process.env, TULVING_PLUGINS: "tulving" }, stdio: "ignore",
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${baseUrl}/v1/health`)).ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error("tulving serve did not start");
    await new Promise((r) => setTimeout(r, 50));
  }
});

after(() => {
  server.kill("SIGTERM");
});

test("every operation of the client exists in the server's OpenAPI document", async () => {
  const spec = await (await fetch(`${baseUrl}/v1/openapi.json`)).json();
  for (const [method, path] of OPERATIONS) {
    assert.ok(spec.paths[path]?.[method], `${method.toUpperCase()} ${path} is not served`);
  }
  const store = spec.components.schemas.Store.properties;
  for (const field of ["content", "type", "key", "tags", "scope", "metadata"]) {
    assert.ok(store[field], `Store.${field}`);
  }
});

test("store, recall, history, correct, curate, forget", async () => {
  const alice = new TulvingClient(baseUrl, tokens.alice);
  assert.equal((await alice.health()).status, "ok");
  const first = await alice.store("deploys go out on Tuesdays", "DECISION", { key: "deploy/day" });
  await alice.store("deploys go out on Thursdays", "DECISION", { key: "deploy/day" });
  const hits = await alice.recall("when do deploys go out");
  assert.equal(hits[0].content, "deploys go out on Thursdays");
  assert.deepEqual((await alice.history("deploy/day")).map((e) => e.content),
    ["deploys go out on Thursdays", "deploys go out on Tuesdays"]);
  const fixed = await alice.correct("deploy/day", "deploys go out on Wednesdays", "moved");
  assert.equal((await alice.get("deploy/day")).id, fixed.id);
  assert.equal((await alice.correctionChain(fixed.id)).length, 3);
  const curated = await alice.curate("deploy day", { token_budget: 200 });
  assert.ok(curated.content.includes("Wednesdays") && curated.token_count <= 200);
  assert.equal(curated.candidates, undefined);
  const explained = await alice.curate("deploy day", { token_budget: 200, explain: true });
  assert.ok(explained.token_count <= 200 && (explained.candidates ?? []).length > 0);
  const shown = (explained.candidates ?? []).filter((c) => c.disclosure !== "left out");
  assert.deepEqual(shown.map((c) => c.entry_id), explained.entries.map((e) => e.id));
  const said = await alice.remember("Ann: I live in Lisbon.", { subject: "Ann",
    idempotencyKey: "ts-1" });
  assert.ok(said.some((e) => e.type === "FACT"));
  const again = await alice.remember("Ann: I live in Lisbon.", { subject: "Ann",
    idempotencyKey: "ts-1" });
  assert.deepEqual(again.map((e) => e.id), said.map((e) => e.id));
  assert.equal((await alice.forget("deploy/day")).id, fixed.id);
  await assert.rejects(alice.get(fixed.id), (e: TulvingError) => e.status === 404);
  assert.notEqual(first.id, fixed.id);
});

test("tenants are isolated and errors are typed", async () => {
  const alice = new TulvingClient(baseUrl, tokens.alice);
  const bob = new TulvingClient(baseUrl, tokens.bob);
  const secret = await alice.store("alice's launch code is pelican", "FACT");
  for (const attempt of [() => bob.get(secret.id), () => bob.history(secret.id),
    () => bob.forget(secret.id), () => bob.correct(secret.id, "hijacked")]) {
    await assert.rejects(attempt(), (e: TulvingError) => e.status === 403 || e.status === 404);
  }
  const found = await bob.search("launch code pelican");
  assert.ok(found.every((h) => !h.content.includes("pelican")));
  const bundle = await bob.exportBundle();
  assert.ok(!Buffer.from(bundle).toString("latin1").includes("pelican"));
  const nobody = new TulvingClient(baseUrl, "tlv_000000000000_wrongwrongwrongwrongwrong");
  await assert.rejects(nobody.stats(), (e: TulvingError) => e.status === 401);
  await assert.rejects(alice.store("", "FACT"), (e: TulvingError) =>
    e.status === 422 && e.kind === "ValidationError");
});

test("export and import round trip, idempotent", async () => {
  const alice = new TulvingClient(baseUrl, tokens.alice, { agentId: "ts-agent" });
  await alice.store("carried in a bundle", "FACT", { key: "bundle/ts" });
  const bundle = await alice.exportBundle();
  const report = await alice.importBundle(bundle, { dryRun: true });
  assert.equal(report.added, 0);
  assert.ok(report.skipped >= 1 && report.dry_run);
});

test("import from another memory system: mapped, idempotent, refused whole", async () => {
  const alice = new TulvingClient(baseUrl, tokens.alice, { agentId: "ts-migrate" });
  const records = JSON.stringify([{ id: "otel-ts-1", content: "the ts client imported this",
    metadata: { origin: "ts" }, score: 0.4 }]);
  const first = await alice.importFrom("otel", records);
  assert.equal(first.added.length, 1);
  assert.ok(first.dropped.some((d) => d.kind === "otel record score"));
  const again = await alice.importFrom("otel", records);
  assert.deepEqual([again.added.length, again.skipped.length], [0, 1]);
  await assert.rejects(alice.importFrom("otel", records.slice(0, -5)),
    (e: TulvingError) => e.status === 422 && e.kind === "ForeignFormatError");
});

test("timeouts and connection errors surface as TulvingError", async () => {
  const dead = new TulvingClient("http://127.0.0.1:9", "tlv_x", { retries: 1, backoffMs: 5,
    timeoutMs: 500 });
  await assert.rejects(dead.health(), (e: TulvingError) => e.kind === "ConnectionError");
  assert.throws(() => new TulvingClient("ftp://x", "t"), TulvingError);
});

test("keys, entries, sessions, consolidation and a missing key", async () => {
  const carol = new TulvingClient(baseUrl, tokens.alice, { agentId: "ts-parity" });
  for (let i = 0; i < 4; i++) {
    await carol.store(`ts parity note ${i}`, "FACT", { key: `tsp/note-${i}`, tags: ["tsp"] });
  }
  assert.deepEqual(await carol.listKeys("tsp/"), [0, 1, 2, 3].map((i) => `tsp/note-${i}`));
  const first = await carol.listEntries({ limit: 3, tags: ["tsp"] });
  assert.equal(first.entries.length, 3);
  assert.ok(first.next_cursor);
  const rest = await carol.listEntries({ limit: 3, tags: ["tsp"],
    cursor: first.next_cursor ?? undefined });
  assert.deepEqual(rest.entries.map((e) => e.key), ["tsp/note-3"]);
  assert.equal(rest.next_cursor, null);
  const session = await carol.startSession("ts parity");
  assert.equal(session.goal, "ts parity");
  assert.equal((await carol.endSession()).id, session.id);
  assert.equal((await carol.consolidate()).applied, false);
  assert.equal(typeof (await carol.profile()), "object");
  await assert.rejects(carol.get("tsp/missing"),
    (e: TulvingError) => e.status === 404 && e.kind === "NotFoundError");
});

test("the profile holds what is known about the user, each item with its id and date", async () => {
  const dana = new TulvingClient(baseUrl, tokens.bob, { agentId: "ts-profile" });
  await dana.store("The user prefers tea over coffee", "PREFERENCE", { importance: 0.9 });
  await dana.store("The user lives in Porto", "FACT");
  await dana.store("Access tokens live 15 minutes", "FACT");
  const profile = await dana.profile() as {
    items: { id: string; content: string; since: string; type: string }[]; text: string };
  assert.deepEqual(profile.items.map((i) => i.content),
    ["The user prefers tea over coffee", "The user lives in Porto"]);
  for (const item of profile.items) {
    assert.ok(profile.text.includes(item.id) && profile.text.includes(item.since.slice(0, 10)));
  }
});
