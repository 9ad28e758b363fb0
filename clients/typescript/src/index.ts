/**
 * TypeScript client of the Tulving memory server (`tulving serve`, the `/v1` API).
 *
 * The same operations as the Python client: remember, recall, store, search, curate,
 * correct, forget, get, history, listKeys, listEntries, startSession, endSession,
 * consolidate, profile, exportBundle, importBundle, importFrom, stats, health. Every call
 * has a timeout (AbortController). Calls that change nothing, and `remember` with an
 * idempotency key, are retried on 429, 503 and network errors with exponential backoff
 * and full jitter; other writes are never repeated. An error response throws a
 * `TulvingError` carrying the server's typed error (`status`, `kind`).
 */

export const SCHEMA_VERSION = 1;

export type MemoryType =
  | "FACT" | "DECISION" | "OBSERVATION" | "PLAN" | "SUMMARY" | "PREFERENCE" | "PROCEDURE"
  | "EPISODE";
export type Scope = "agent" | "session" | "personal" | "shared" | "workspace" | "model_specific";

export interface Entry {
  id: string;
  content: string;
  type: MemoryType;
  key: string | null;
  tags: string[];
  scope: Scope;
  importance: number;
  pinned: boolean;
  agent_id: string;
  created_at: string;
  valid_from: string;
  supersedes: string | null;
  superseded_by: string | null;
  archived_at: string | null;
  archive_reason: string | null;
  metadata: Record<string, unknown>;
  [field: string]: unknown;
}

export interface Hit extends Entry {
  score: number;
  match_type: "hybrid" | "semantic" | "lexical" | "key";
  relevance?: number;
}

export interface Curated {
  content: string;
  token_count: number;
  token_budget: number;
  entries: Array<{ id: string; type: MemoryType; key: string | null; score?: number }>;
  /** With `explain: true`: every ranked candidate, best first. */
  candidates?: CandidateReport[];
  [field: string]: unknown;
}

/** Why one candidate was shown in full, truncated, as an index line, or left out. */
export interface CandidateReport {
  entry_id: string;
  type: MemoryType;
  key: string | null;
  preview: string;
  score: number;
  relevance: number;
  recency: number;
  importance: number;
  frequency: number;
  type_prior: number;
  trust: number;
  disclosure: "full" | "truncated" | "excerpt" | "index" | "left out";
  reason: "over budget" | "near-duplicate" | null;
  tokens: number;
  section: string;
}

export interface StoreOptions {
  key?: string;
  tags?: string[];
  importance?: number;
  pinned?: boolean;
  metadata?: Record<string, unknown>;
  scope?: Scope;
  valid_from?: string;
  entity?: string;
  attribute?: string;
  value?: string;
  source_instance?: string;
}

export interface RecallOptions {
  limit?: number;
  tags?: string[];
  types?: MemoryType[];
  scope?: Scope;
  model_id?: string;
  source_instance?: string;
  min_relevance?: number;
  recency_weight?: number;
  confidence_weight?: number;
}

export interface SearchOptions {
  top_k?: number;
  mode?: "hybrid" | "semantic" | "lexical" | "key";
  types?: MemoryType[];
  tags?: string[];
  since?: string;
  until?: string;
  min_score?: number;
  as_of?: string;
}

export interface CurateOptions {
  token_budget?: number;
  mode?: "query" | "orient";
  types?: MemoryType[];
  tags?: string[];
  since?: string;
  until?: string;
  /** Add `candidates`: each ranked candidate's score broken down, disclosure, cost. */
  explain?: boolean;
}

export interface ImportReport {
  added: number;
  updated: number;
  skipped: number;
  conflicts: number;
  reembedded: number;
  dry_run: boolean;
  added_ids: string[];
  [field: string]: unknown;
}

/** What an import from another memory system did, and what of its file went where. */
export interface MigrationReport {
  format: ForeignFormat;
  dry_run: boolean;
  added: string[];
  updated: string[];
  skipped: string[];
  conflicts: string[];
  mapped: { kind: string; count: number; into: string }[];
  dropped: { kind: string; count: number; why: string }[];
}

export type ForeignFormat = "mem0" | "zep" | "letta" | "otel";

export interface ListEntriesOptions {
  limit?: number;
  cursor?: string;
  types?: MemoryType[];
  tags?: string[];
  scope?: Scope;
  since?: string;
  until?: string;
  include_archived?: boolean;
}

/** A page of `listEntries`: pass `next_cursor` back for the next one (null: no more). */
export interface EntryPage {
  entries: Entry[];
  next_cursor: string | null;
}

export interface SessionRecord {
  id?: string;
  goal?: string | null;
  started_at?: string;
  ended_at?: string | null;
  [field: string]: unknown;
}

export interface ClientOptions {
  /** Agent id to act as when the token is not bound to one. */
  agentId?: string;
  /** Milliseconds per attempt (default 30 000). */
  timeoutMs?: number;
  /** Retries of idempotent calls (default 3). */
  retries?: number;
  /** Base of the exponential backoff in milliseconds (default 200). */
  backoffMs?: number;
}

export class TulvingError extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
  ) {
    super(`${status} ${kind}: ${message}`);
    this.name = "TulvingError";
  }
}

/** The requests this client makes, as (method, path template): checked against the
 * server's OpenAPI document by the tests. */
export const OPERATIONS: ReadonlyArray<readonly [string, string]> = [
  ["get", "/v1/health"],
  ["get", "/v1/stats"],
  ["post", "/v1/store"],
  ["post", "/v1/remember"],
  ["post", "/v1/recall"],
  ["post", "/v1/search"],
  ["post", "/v1/curate"],
  ["post", "/v1/correct"],
  ["delete", "/v1/forget/{memory_id}"],
  ["get", "/v1/memory/{memory_id}"],
  ["get", "/v1/memory/{memory_id}/history"],
  ["get", "/v1/keys"],
  ["get", "/v1/entries"],
  ["post", "/v1/sessions/start"],
  ["post", "/v1/sessions/end"],
  ["post", "/v1/consolidate"],
  ["get", "/v1/profile"],
  ["post", "/v1/export"],
  ["post", "/v1/import"],
  ["post", "/v1/import/{source_format}"],
];

const RETRY_STATUS = new Set([429, 503]);

export class TulvingClient {
  readonly baseUrl: string;
  private readonly token: string;
  private readonly agentId?: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;

  constructor(baseUrl: string, token: string, options: ClientOptions = {}) {
    if (!/^https?:\/\//.test(baseUrl)) {
      throw new TulvingError(0, "ConfigError", `baseUrl must be an http(s) URL: ${baseUrl}`);
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = token;
    this.agentId = options.agentId;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retries = options.retries ?? 3;
    this.backoffMs = options.backoffMs ?? 200;
  }

  private body(fields: object): string {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = v;
    if (this.agentId !== undefined && out.agent_id === undefined) out.agent_id = this.agentId;
    return JSON.stringify(out);
  }

  private query(params: Record<string, string | string[] | undefined> = {}): string {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) {
        checkText(one, `the query's ${k}`);
        search.append(k, one);
      }
    }
    if (this.agentId !== undefined) search.set("agent_id", this.agentId);
    const text = search.toString();
    return text ? `?${text}` : "";
  }

  private async request(
    method: string, path: string, init: { body?: BodyInit; json?: boolean; retry: boolean },
  ): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), this.timeoutMs);
      try {
        const response = await fetch(this.baseUrl + path, {
          method,
          body: init.body,
          signal: controller.signal,
          headers: {
            Authorization: `Bearer ${this.token}`,
            ...(init.json ? { "Content-Type": "application/json" } : {}),
            ...(init.body instanceof Blob ? { "Content-Type": "application/zip" } : {}),
          },
        });
        if (!RETRY_STATUS.has(response.status) || !init.retry || attempt >= this.retries) {
          if (response.status >= 400) throw await errorOf(response);
          return response;
        }
        await response.arrayBuffer();
      } catch (error) {
        if (error instanceof TulvingError) throw error;
        if (!init.retry || attempt >= this.retries) {
          throw new TulvingError(0, "ConnectionError", String(error));
        }
      } finally {
        clearTimeout(timer);
      }
      await sleep(Math.random() * this.backoffMs * 2 ** attempt); // full jitter
    }
  }

  private async json(method: string, path: string, fields: object | undefined,
    retry: boolean): Promise<any> {
    const response = await this.request(method, path, {
      body: fields === undefined ? undefined : this.body(fields), json: fields !== undefined,
      retry,
    });
    return response.json();
  }

  async health(): Promise<{ status: string; schema_version: number; version: string }> {
    return this.json("GET", "/v1/health", undefined, true);
  }

  async stats(): Promise<Record<string, unknown>> {
    return (await this.json("GET", `/v1/stats${this.query()}`, undefined, true)).stats;
  }

  async store(content: string, type: MemoryType, options: StoreOptions = {}): Promise<Entry> {
    return (await this.json("POST", "/v1/store", { content, type, ...options }, false)).stored;
  }

  /** The turns, committed and findable by full text when it answers; what is read off
   * them follows on the server (`wait: true` answers once that is written too). */
  async remember(text: string,
    options: { subject?: string; idempotencyKey?: string; wait?: boolean } = {},
  ): Promise<Entry[]> {
    const body = { text, subject: options.subject, idempotency_key: options.idempotencyKey,
      ...(options.wait ? { wait: true } : {}) };
    return (await this.json("POST", "/v1/remember", body,
      options.idempotencyKey !== undefined)).entries;
  }

  async recall(query: string, options: RecallOptions = {}): Promise<Hit[]> {
    return (await this.json("POST", "/v1/recall", { query, ...options }, true)).results;
  }

  async search(query: string, options: SearchOptions = {}): Promise<Hit[]> {
    return (await this.json("POST", "/v1/search", { query, ...options }, true)).results;
  }

  async curate(query: string | null, options: CurateOptions = {}): Promise<Curated> {
    const body = { query: query ?? undefined, ...options };
    return (await this.json("POST", "/v1/curate", body, true)).curated;
  }

  async correct(memoryId: string, content: string, reason?: string): Promise<Entry> {
    const body = { memory_id: memoryId, content, reason };
    return (await this.json("POST", "/v1/correct", body, false)).corrected;
  }

  async forget(memoryId: string, options: { hard?: boolean } = {}): Promise<Entry> {
    const path = `/v1/forget/${encodeId(memoryId)}${this.query({ hard: String(!!options.hard) })}`;
    return (await this.json("DELETE", path, undefined, true)).forgotten;
  }

  async get(memoryId: string): Promise<Entry> {
    return (await this.json("GET", `/v1/memory/${encodeId(memoryId)}${this.query()}`,
      undefined, true)).entry;
  }

  async history(memoryId: string): Promise<Entry[]> {
    return (await this.json("GET", `/v1/memory/${encodeId(memoryId)}/history${this.query()}`,
      undefined, true)).versions;
  }

  /** The keys of the active memories, starting with `prefix`. */
  async listKeys(prefix = ""): Promise<string[]> {
    return (await this.json("GET", `/v1/keys${this.query({ prefix })}`, undefined, true)).keys;
  }

  /** Every visible memory, oldest first, a page at a time (`next_cursor` for the next). */
  async listEntries(options: ListEntriesOptions = {}): Promise<EntryPage> {
    const path = "/v1/entries" + this.query({
      limit: options.limit === undefined ? undefined : String(options.limit),
      cursor: options.cursor, type: options.types, tag: options.tags, scope: options.scope,
      since: options.since, until: options.until,
      include_archived: options.include_archived === undefined ? undefined
        : String(options.include_archived),
    });
    const data = await this.json("GET", path, undefined, true);
    return { entries: data.entries, next_cursor: data.next_cursor ?? null };
  }

  /** Start a working session (its `id`, `goal`, `started_at`). */
  async startSession(goal?: string): Promise<SessionRecord> {
    return (await this.json("POST", "/v1/sessions/start", { goal }, false)).session;
  }

  /** End the working session (summarised); `{}` when none was open. */
  async endSession(): Promise<SessionRecord> {
    return (await this.json("POST", "/v1/sessions/end", {}, false)).session;
  }

  /** Consolidation: a dry run unless `apply`. */
  async consolidate(options: { apply?: boolean } = {}): Promise<{
    report: Record<string, unknown>; applied: boolean }> {
    const data = await this.json("POST", "/v1/consolidate", { apply: options.apply ?? false },
      !options.apply);
    return { report: data.report, applied: data.applied };
  }

  /** What the memory holds about `subject` (default "user"). */
  async profile(subject = "user"): Promise<Record<string, unknown>> {
    return (await this.json("GET", `/v1/profile${this.query({ subject })}`, undefined,
      true)).profile;
  }

  /** Every version of a corrected or superseded memory, newest first. */
  async correctionChain(memoryId: string): Promise<Entry[]> {
    return this.history(memoryId);
  }

  /** Recall within one scope ("workspace", "shared", ...). */
  async scoped(scope: Scope, query: string, limit = 10): Promise<Hit[]> {
    return this.recall(query, { scope, limit });
  }

  /** The bundle of what this token's tenant sees (a zip: see the README's format). */
  async exportBundle(filters: Record<string, unknown> = {}): Promise<Uint8Array> {
    const response = await this.request("POST", "/v1/export", {
      body: this.body(filters), json: true, retry: true,
    });
    return new Uint8Array(await response.arrayBuffer());
  }

  async importBundle(bundle: Uint8Array, options: { reembedding?: string;
    onConflict?: string; dryRun?: boolean } = {}): Promise<ImportReport> {
    const path = "/v1/import" + this.query({
      reembedding: options.reembedding, on_conflict: options.onConflict,
      dry_run: options.dryRun === undefined ? undefined : String(options.dryRun),
    });
    const response = await this.request("POST", path, {
      body: new Blob([bundle as Uint8Array<ArrayBuffer>], { type: "application/zip" }), retry: false,
    });
    return (await response.json()).report;
  }

  /** Another memory system's export (a Mem0 get_all JSON, a Zep/Graphiti graph, a Letta
   * agent file, OpenTelemetry memory records) merged in, all or nothing. */
  async importFrom(format: ForeignFormat, file: Uint8Array | string, options: {
    onConflict?: string; dryRun?: boolean; remapIdentity?: boolean } = {}
  ): Promise<MigrationReport> {
    const path = `/v1/import/${encodeURIComponent(format)}` + this.query({
      on_conflict: options.onConflict,
      dry_run: options.dryRun === undefined ? undefined : String(options.dryRun),
      remap_identity: options.remapIdentity === undefined ? undefined
        : String(options.remapIdentity),
    });
    const bytes = typeof file === "string" ? new TextEncoder().encode(file) : file;
    const response = await this.request("POST", path, {
      body: new Blob([bytes as Uint8Array<ArrayBuffer>], { type: "application/json" }),
      retry: false,
    });
    return (await response.json()).report;
  }
}

/** An id or key as one path segment, percent-encoded whole ("/" as %2F): whatever it
 * holds (`..`, `../keys`, `?x=`, `#`, `x/history`), the request goes to the route the
 * method names; the server decodes the segment before routing. The empty string, "."
 * and ".." cannot be a segment (a URL resolves them away), and text that is not valid
 * Unicode (a lone surrogate) has no UTF-8 form: both are refused before sending. */
function encodeId(id: string): string {
  if (typeof id !== "string" || id === "" || id === "." || id === "..") {
    throw new TulvingError(0, "ValidationError",
      `memory id ${JSON.stringify(id)} is not an id or a key (a URL cannot carry it as a path segment)`);
  }
  checkText(id, "memory id");
  return encodeURIComponent(id);
}

/** A lone surrogate: half of a UTF-16 pair without the other half. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Refuses text a URL cannot carry: `encodeURIComponent` throws a URIError on it and
 * `URLSearchParams` would silently send U+FFFD in its place. */
function checkText(text: string, what: string): void {
  const found = LONE_SURROGATE.exec(text);
  if (found !== null) {
    throw new TulvingError(0, "ValidationError",
      `${what} (a lone surrogate at position ${found.index}) is not valid Unicode text`);
  }
}

async function errorOf(response: Response): Promise<TulvingError> {
  const text = await response.text();
  try {
    const error = JSON.parse(text).error;
    return new TulvingError(response.status, error.type, error.message);
  } catch {
    return new TulvingError(response.status, "HTTPError", text.slice(0, 500));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
