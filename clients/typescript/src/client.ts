/** PromptClient: reads prompt versions, with tokens, cache, revalidation and watching handled. */

import { ClientCredentialsProvider, SdkTokenProvider, type TokenProvider } from "./auth.js";
import { type CacheEntry, type Clock, cacheKey, LABELS, PromptCache } from "./cache.js";
import { type Answer, errorForAnswer, invalidResponse, isRecord, jsonOf, ServerError, TransportError } from "./errors.js";
import { type FetchLike, monotonic, type Outgoing, RetryPolicy, requestHeaders, sendWithRetries } from "./http.js";
import { type Fallback, ModelError, PromptVersion, tagVersion, usageTag } from "./prompt-version.js";
import { bucket } from "./rollout.js";
import { parseSnapshot, type Snapshot, type SnapshotItem, type SnapshotStore, snapshotText } from "./snapshot.js";
import { loadTracing } from "./tracing.js";
import { type Counted, itemOf, MAX_ITEMS, readEnvironment, USAGE_PATH, UsageCounter } from "./usage.js";
import { Watcher } from "./watch.js";

/** Where the client reports what it recovered from (stale entries, fallbacks, stream drops). */
export interface Logger {
  warn(message: string): void;
}

/** Settings every way of making a client shares. Durations are in seconds. */
export interface ClientOptions {
  /** Seconds a resolved version is served from memory (300); 0 turns caching off. */
  cacheTtl?: number;
  /** Time budget of one call: its token fetch, attempts and backoff share it (10). */
  timeout?: number;
  /** Extra attempts after a transport error or a 5xx, never after a 4xx (2). */
  maxRetries?: number;
  /** Backoff before retry n: a random time between half and all of min(4, retryBackoff * 2^n) (0.25). */
  retryBackoff?: number;
  /** Serve an expired entry when the service is unreachable or answers 5xx (true). */
  staleIfError?: boolean;
  /** Follow the org's change events, dropping a prompt's entries when it changes (false). */
  watch?: boolean;
  /** The fetch to use (default: the global one). */
  fetch?: FetchLike;
  /** Seconds on a monotonic clock, for cache and token expiry: a seam for tests. */
  clock?: Clock;
  /** Default: console. */
  logger?: Logger;
  /** Load every prompt's version in `environment` (or only these names) before `ready()`
   * resolves, one request per page, so later reads of it are cache hits (false). */
  preload?: boolean | readonly string[];
  /** The environment `preload` reads ("production"). */
  environment?: string;
  /** Keeps the cache outside the process (a `FileSnapshotStore` from
   * `@promptsvc/client/node`, or any `{load, save}`): loaded by `ready()`, its versions
   * (marked `is_stale`) are served while the service cannot answer. */
  snapshotStore?: SnapshotStore;
  /** Count renders and outcomes and send them to the service (true); false sends nothing. */
  reportUsage?: boolean;
  /** Seconds between background sends of the usage counted (30); `close()` sends too. */
  usageInterval?: number;
}

/** `recordOutcome`'s options. */
export interface OutcomeOptions {
  /** Whether the call that used the prompt went well (true) or is an error. */
  ok?: boolean;
  /** A score of the result, 0-1. */
  score?: number | null;
}

/** `cacheInfo()`: calls answered from the cache, calls that asked the service, versions
 * served stale, fallbacks served, and cached entries. */
export interface CacheInfo {
  hits: number;
  misses: number;
  stale_served: number;
  fallbacks: number;
  entries: number;
}

export interface PromptClientOptions extends ClientOptions {
  baseUrl: string;
  /** The org slug. */
  accountId?: string;
  keyId?: string;
  keySecret?: string;
  /** Seconds before `expires_in` runs out that a token is replaced (60). */
  tokenRefreshBuffer?: number;
  /** A token provider instead of the key (it has its own refresh buffer). */
  auth?: TokenProvider;
}

export interface ClientCredentialsOptions extends ClientOptions {
  baseUrl: string;
  /** The identity service's base URL (the realm's issuer without `/realms/<org>`). */
  authUrl: string;
  org: string;
  clientId: string;
  clientSecret: string;
  /** Seconds before expiry that a token is replaced (30). */
  tokenRefreshBuffer?: number;
}

export interface GetOptions {
  /** `production` (the default), `latest`, or an environment's name. */
  label?: string;
  /** A version id (`v_...`) or number; not with `label`. */
  version?: string | number;
  /** A stable id of the caller (user, tenant): picks its side of a rollout under way. */
  rolloutKey?: string;
  /** Served when the service cannot answer and nothing is cached: text or chat messages. */
  fallback?: Fallback;
}

export const ENV_VARS = ["PROMPTSVC_URL", "PROMPTSVC_ACCOUNT_ID", "PROMPTSVC_KEY_ID", "PROMPTSVC_KEY_SECRET"] as const;
const ENVIRONMENT = /^[a-z][a-z0-9-]{0,31}$/;
/** Page size of a preload (the most the service gives in one page). */
const PRELOAD_PAGE = 1000;
/** Seconds a version from the snapshot is served before the service is asked again. */
export const STALE_RETRY = 5;
/** Rollout buckets remembered (per rollout id and key) before the memo starts over. */
const BUCKETS_KEPT = 10_000;

/** The API path of a call and whether it is a production read; TypeError for bad arguments. */
export function resolvePath(name: string, label?: string, version?: string | number): { path: string; production: boolean } {
  if (typeof name !== "string" || name === "") throw new TypeError("name must be a non-empty string");
  const prefix = `/api/v1/prompts/${encodeURIComponent(name)}`;
  if (version !== undefined) {
    if (label !== undefined) throw new TypeError("pass either label or version, not both");
    const ok = (typeof version === "string" && version !== "") || Number.isInteger(version);
    if (!ok) throw new TypeError("version must be a version id (v_...) or a version number");
    return { path: `${prefix}/versions/${encodeURIComponent(String(version))}`, production: false };
  }
  const chosen = label ?? "production";
  if (LABELS.has(chosen)) return { path: `${prefix}/${chosen}`, production: chosen === "production" };
  if (!ENVIRONMENT.test(chosen)) {
    throw new TypeError(`unknown label '${chosen}': use 'production', 'latest' or an environment's name`);
  }
  return { path: `${prefix}/environments/${chosen}`, production: false };
}

/**
 * Reads prompt versions from a promptsvc service.
 *
 * `new PromptClient({ baseUrl, accountId, keyId, keySecret })` exchanges the API key for
 * tokens at `{baseUrl}/v1/auth/sdk-token`; `PromptClient.withClientCredentials` and
 * `PromptClient.fromEnv` are the other ways to make one. Share one client per process;
 * with `watch: true`, call `close()` when done (the open stream keeps a Node.js process
 * alive until then).
 */
export class PromptClient {
  readonly baseUrl: string;
  readonly staleIfError: boolean;
  readonly #auth: TokenProvider;
  readonly #cache: PromptCache;
  readonly #policy: RetryPolicy;
  readonly #fetch: FetchLike;
  readonly #logger: Logger;
  readonly #flights = new Map<string, Promise<PromptVersion>>();
  readonly #buckets = new Map<string, number>();
  readonly #watcher: Watcher | null;
  readonly #environment: string;
  readonly #preload: ReadonlySet<string> | null; // null: every prompt
  readonly #preloading: boolean;
  readonly #store: SnapshotStore | null;
  #snapshot: Snapshot | null = null;
  #items = new Map<string, SnapshotItem>();
  #eventId: string | null = null;
  #saving: Promise<void> = Promise.resolve();
  readonly #ready: Promise<void>;
  readonly #usage: UsageCounter | null;
  readonly #usageTimer: ReturnType<typeof setInterval> | null = null;
  #sending: Promise<void> = Promise.resolve();
  #closed = false;
  #hits = 0;
  #misses = 0;
  #staleServed = 0;
  #fallbacks = 0;

  constructor(options: PromptClientOptions) {
    const { cacheTtl = 300, timeout = 10, maxRetries = 2, retryBackoff = 0.25 } = options;
    if (!(cacheTtl >= 0 && timeout > 0 && maxRetries >= 0 && retryBackoff >= 0)) {
      throw new RangeError("cacheTtl, maxRetries and retryBackoff must be >= 0, timeout > 0");
    }
    if (typeof options.baseUrl !== "string" || options.baseUrl === "") throw new TypeError("baseUrl is required");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    const clock = options.clock ?? monotonic;
    const { accountId, keyId, keySecret } = options;
    if (options.auth !== undefined) {
      this.#auth = options.auth;
    } else if (accountId && keyId && keySecret) {
      this.#auth = new SdkTokenProvider(this.baseUrl, accountId, keyId, keySecret, options.tokenRefreshBuffer ?? 60, clock);
    } else {
      throw new TypeError("give accountId, keyId and keySecret (or auth)");
    }
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#logger = options.logger ?? console;
    this.#cache = new PromptCache(cacheTtl, clock);
    this.#policy = new RetryPolicy(timeout, maxRetries, retryBackoff);
    this.staleIfError = options.staleIfError ?? true;
    this.#watcher = options.watch
      ? new Watcher({
          baseUrl: this.baseUrl,
          cache: this.#cache,
          fetch: this.#fetch,
          token: (stale) => this.#auth.token(this.#fetch, this.#policy, this.#policy.deadline(), stale),
          get: (path) => this.#call(path, null),
          warn: (message) => this.#logger.warn(message),
        })
      : null;
    this.#environment = options.environment ?? "production";
    if (!ENVIRONMENT.test(this.#environment)) throw new TypeError(`environment '${this.#environment}' is not an environment name`);
    const preload = options.preload ?? false;
    this.#preloading = preload !== false;
    this.#preload = typeof preload === "boolean" ? null : new Set(preload);
    this.#store = options.snapshotStore ?? null;
    const { reportUsage = true, usageInterval = 30 } = options;
    if (!(usageInterval > 0)) throw new RangeError("usageInterval must be > 0 (seconds)");
    void loadTracing();
    this.#usage = reportUsage ? new UsageCounter(undefined, (message) => this.#logger.warn(message)) : null;
    if (this.#usage !== null) {
      this.#usageTimer = setInterval(() => {
        this.flushUsage().catch((error: unknown) => {
          this.#logger.warn(`promptsvc: usage: cannot send now, kept for the next send: ${String(error)}`);
        });
      }, usageInterval * 1000);
      // Node.js: the timer alone does not keep the process alive.
      (this.#usageTimer as { unref?: () => void }).unref?.();
    }
    if (!this.#preloading && this.#store === null) {
      this.#watcher?.start();
      this.#ready = Promise.resolve();
    } else {
      this.#ready = this.#start();
      this.#ready.catch(() => undefined); // reported by ready(), which the caller awaits
    }
  }

  /**
   * Resolves once the snapshot is loaded and the preload done (and the watch started
   * after the preload's `event_id`). A preload that fails rejects, unless the snapshot
   * had versions to serve (then they are, marked `is_stale`, until the service answers).
   */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** `{hits, misses, stale_served, fallbacks, entries}`. */
  cacheInfo(): CacheInfo {
    return {
      hits: this.#hits,
      misses: this.#misses,
      stale_served: this.#staleServed,
      fallbacks: this.#fallbacks,
      entries: this.#cache.size,
    };
  }

  /** Load the environment read into the cache now, one request per page. */
  async preload(): Promise<void> {
    await this.#preloadPages();
  }

  async #start(): Promise<void> {
    if (this.#store !== null) await this.#loadSnapshot(this.#store);
    let eventId = this.#snapshot !== null && this.#snapshot.entries.length > 0 ? this.#snapshot.eventId : null;
    if (this.#preloading) {
      try {
        eventId = await this.#preloadPages();
      } catch (error) {
        if (!(error instanceof TransportError || error instanceof ServerError) || !this.#snapshot?.entries.length) throw error;
        this.#logger.warn(`promptsvc: preload failed, serving the snapshot until the service answers: ${error.message}`);
        for (const entry of this.#snapshot.entries) this.#cache.putStale(entry.key, entry.prompt, entry.stale, STALE_RETRY);
      }
    }
    if (this.#watcher !== null) {
      if (eventId !== null) this.#watcher.lastId = eventId;
      this.#watcher.start();
    }
  }

  async #loadSnapshot(store: SnapshotStore): Promise<void> {
    let text: string | null;
    try {
      text = await store.load();
    } catch (error) {
      this.#logger.warn(`promptsvc: ignoring the snapshot: cannot load it: ${String(error)}`);
      return;
    }
    if (text === null) return;
    try {
      this.#snapshot = parseSnapshot(text);
    } catch (error) {
      this.#logger.warn(`promptsvc: ignoring the snapshot: not a whole snapshot: ${String(error)}`);
      return;
    }
    this.#items = new Map(this.#snapshot.items);
    this.#eventId = this.#snapshot.eventId;
    await loadTracing();
    for (const entry of this.#snapshot.entries) {
      tagVersion(entry.stale, readEnvironment(entry.path), this.#usage);
      this.#cache.putStale(entry.key, entry.prompt, entry.stale, 0);
    }
  }

  /** Every prompt's version in the environment (or the names asked for) into the cache,
   * one request per page; the first page's event id. */
  async #preloadPages(): Promise<string | null> {
    const base = `/api/v1/environments/${encodeURIComponent(this.#environment)}/prompts?limit=${PRELOAD_PAGE}`;
    let cursor: string | null = null;
    let eventId: string | null = null;
    let first = true;
    await loadTracing();
    do {
      const generation = this.#cache.generation;
      const answer = await this.#call(cursor === null ? base : `${base}&cursor=${encodeURIComponent(cursor)}`, null);
      if (answer.status !== 200) throw errorForAnswer(answer);
      const body = jsonOf(answer);
      const items = isRecord(body) ? body["items"] : undefined;
      if (!isRecord(body) || !Array.isArray(items)) throw invalidResponse(answer, "environment page without items");
      if (first) {
        first = false;
        eventId = typeof body["event_id"] === "string" ? body["event_id"] : null;
      }
      for (const item of items) {
        let version: PromptVersion;
        try {
          version = PromptVersion.fromJson(item);
        } catch (error) {
          if (error instanceof ModelError) throw invalidResponse(answer, error.message);
          throw error;
        }
        if (this.#preload !== null && !this.#preload.has(version.name)) continue;
        tagVersion(version, this.#environment, this.#usage);
        const key = cacheKey(version.name, this.#environment, undefined);
        this.#cache.put(key, version.name, version, null, generation);
        this.#items.set(key, { prompt: version.name, path: resolvePath(version.name, this.#environment).path, version: item });
      }
      cursor = typeof body["next_cursor"] === "string" && body["next_cursor"] !== "" ? body["next_cursor"] : null;
    } while (cursor !== null);
    if (eventId !== null) this.#eventId = eventId;
    this.#save();
    return eventId;
  }

  /** Save the snapshot (in order, one at a time); a failure is a warning. */
  #save(): void {
    const store = this.#store;
    if (store === null) return;
    const text = snapshotText(this.#eventId, this.#items);
    this.#saving = this.#saving
      .then(() => store.save(text))
      .catch((error: unknown) => this.#logger.warn(`promptsvc: cannot save the snapshot: ${String(error)}`));
  }

  /** A client whose tokens come from the realm's OAuth 2.0 token endpoint (docs/api.md section 3.2). */
  static withClientCredentials(options: ClientCredentialsOptions): PromptClient {
    const { authUrl, org, clientId, clientSecret, tokenRefreshBuffer = 30, ...rest } = options;
    const auth = new ClientCredentialsProvider(authUrl, org, clientId, clientSecret, tokenRefreshBuffer, rest.clock ?? monotonic);
    return new PromptClient({ ...rest, auth });
  }

  /**
   * A client from PROMPTSVC_URL, PROMPTSVC_ACCOUNT_ID, PROMPTSVC_KEY_ID and
   * PROMPTSVC_KEY_SECRET, read from `env` (default: `process.env` where there is one);
   * TypeError names any that are unset.
   */
  static fromEnv(env?: Readonly<Record<string, string | undefined>>, options: ClientOptions = {}): PromptClient {
    const source = env ?? (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {};
    const missing = ENV_VARS.filter((name) => !source[name]);
    if (missing.length > 0) throw new TypeError(`environment variables not set: ${missing.join(", ")}`);
    const [baseUrl, accountId, keyId, keySecret] = ENV_VARS.map((name) => source[name] as string) as [string, string, string, string];
    return new PromptClient({ ...options, baseUrl, accountId, keyId, keySecret });
  }

  /** Whether the change-event stream (`watch: true`) is open right now. */
  get watching(): boolean {
    return this.#watcher?.connected ?? false;
  }

  /**
   * The version of prompt `name`: production by default; `{label: "latest"}` the newest
   * (any status); `{label: "<environment>"}` that environment's; `{version}` that one.
   * Cached under `prompt:<name>:<label or version>`. With `rolloutKey`, a rollout under
   * way on the cached entry decides locally which of baseline and candidate the key
   * gets. `fallback` is served (with `is_fallback` true, never cached) when the service
   * cannot answer (TransportError, ServerError) and no cached entry can be served.
   * Rejects with TypeError for bad arguments, else a PromptServiceError.
   */
  async getPromptVersion(name: string, options: GetOptions = {}): Promise<PromptVersion> {
    const key = cacheKey(name, options.label, options.version);
    const hit = this.#cache.fresh(key);
    if (hit !== undefined) {
      if (hit.version.is_stale) this.#staleServed += 1;
      else this.#hits += 1;
      return this.#pick(hit.version, options.rolloutKey);
    }
    const fallback = options.fallback;
    // Content is checked before the call (a bad one throws at once); a function is called
    // only when its fallback is served.
    const spare = fallback === undefined || typeof fallback === "function" ? null : PromptVersion.fallback(name, fallback);
    this.#misses += 1;
    let found: PromptVersion;
    try {
      await this.#ready.catch(() => undefined); // the snapshot's versions, once loaded
      found = await this.#flight(key, () => this.#miss(name, options.label, options.version, key));
    } catch (error) {
      if (fallback === undefined || !(error instanceof TransportError || error instanceof ServerError)) throw error;
      this.#logger.warn(`promptsvc: serving the caller's fallback for ${key}: ${error.message}`);
      this.#fallbacks += 1;
      return spare ?? PromptVersion.fallback(name, typeof fallback === "function" ? fallback(name) : fallback);
    }
    return this.#pick(found, options.rolloutKey);
  }

  /** Drop every cached version; the next call of each key asks the service. */
  clearCache(): void {
    this.#cache.clear();
  }

  /**
   * Count an outcome of `version` (as this client's reads returned it): `ok` (true) or
   * an error, and a `score` in 0-1 when there is one. Sent with the renders
   * (docs/usage.md); a guarded rollout compares its arms by them. Nothing is counted with
   * `reportUsage: false` or for a fallback. RangeError for a score outside 0-1.
   */
  recordOutcome(version: PromptVersion, options: OutcomeOptions = {}): void {
    const { ok = true, score = null } = options;
    if (score !== null && !(typeof score === "number" && score >= 0 && score <= 1)) {
      throw new RangeError("score must be a number from 0 to 1 (or null)");
    }
    const tag = usageTag(version);
    if (this.#usage !== null && tag !== null) this.#usage.record(tag.key, ok, score);
  }

  /**
   * Send the usage counted so far now (as the background send every `usageInterval`
   * seconds does), at most 500 items a request. Rejects as the request failed, keeping
   * the counts for the next send; a refusal other than 429 drops them with a warning.
   */
  flushUsage(): Promise<void> {
    const counter = this.#usage;
    if (counter === null) return Promise.resolve();
    const send = this.#sending.catch(() => undefined).then(() => this.#sendUsage(counter));
    this.#sending = send;
    return send;
  }

  async #sendUsage(counter: UsageCounter): Promise<void> {
    const unsent = counter.take();
    try {
      while (unsent.size > 0) {
        const batch: Array<[string, Counted]> = [...unsent].slice(0, MAX_ITEMS);
        const answer = await this.#call(USAGE_PATH, null, JSON.stringify({ items: batch.map(([, counted]) => itemOf(counted)) }));
        if (answer.status === 429) throw errorForAnswer(answer);
        if (answer.status >= 300) {
          this.#logger.warn(`promptsvc: usage: dropping ${batch.length} items the service refused: ${errorForAnswer(answer).message}`);
        }
        for (const [id] of batch) unsent.delete(id);
      }
    } finally {
      counter.giveBack(unsent);
    }
  }

  /** Stop watching and reporting, and send the usage counted since the last send. The
   * cache and token are kept; calls still work. */
  async close(): Promise<void> {
    await this.#watcher?.stop();
    if (this.#usageTimer !== null) clearInterval(this.#usageTimer);
    if (this.#usage === null || this.#closed) return;
    this.#closed = true;
    try {
      await this.flushUsage();
    } catch (error) {
      this.#logger.warn(`promptsvc: usage: the send at close failed; its counts are lost: ${String(error)}`);
    }
  }

  #pick(version: PromptVersion, rolloutKey: string | undefined): PromptVersion | Promise<PromptVersion> {
    const rollout = version.rollout;
    if (rollout === null || rolloutKey === undefined || rolloutKey === "") return version;
    const id = `${rollout.rollout_id}:${rolloutKey}`;
    const known = this.#buckets.get(id);
    if (known !== undefined) return known < rollout.percent * 100 ? rollout.candidate : version;
    return bucket(rollout.rollout_id, rolloutKey).then((b) => {
      if (this.#buckets.size >= BUCKETS_KEPT) this.#buckets.clear();
      this.#buckets.set(id, b);
      return b < rollout.percent * 100 ? rollout.candidate : version;
    });
  }

  /** One fetch per key at a time: callers that miss while it runs share its outcome. */
  #flight(key: string, fetchIt: () => Promise<PromptVersion>): Promise<PromptVersion> {
    let flight = this.#flights.get(key);
    if (flight === undefined) {
      flight = fetchIt().finally(() => this.#flights.delete(key));
      this.#flights.set(key, flight);
    }
    return flight;
  }

  /** Fetch (or revalidate) `key`, cache it, serve it stale if the service is down. */
  async #miss(name: string, label: string | undefined, version: string | number | undefined, key: string): Promise<PromptVersion> {
    const { path, production } = resolvePath(name, label, version);
    const entry: CacheEntry | undefined = this.#cache.get(key);
    const generation = this.#cache.generation;
    let answer: Answer;
    try {
      answer = await this.#call(path, entry?.etag ?? null);
    } catch (error) {
      if (entry === undefined || !this.staleIfError || !(error instanceof TransportError || error instanceof ServerError)) {
        throw error;
      }
      this.#logger.warn(`promptsvc: serving expired ${key}: ${error.message}`);
      this.#staleServed += 1;
      if (entry.version.is_stale) this.#cache.putStale(key, name, entry.version, STALE_RETRY);
      return entry.version;
    }
    let found: PromptVersion;
    let body: unknown = null;
    let etag = answer.headers.get("ETag");
    if (answer.status === 304 && entry !== undefined) {
      found = entry.version;
      etag ??= entry.etag;
    } else if (answer.status === 200) {
      body = jsonOf(answer);
      try {
        found = PromptVersion.fromJson(body);
      } catch (error) {
        if (error instanceof ModelError) throw invalidResponse(answer, error.message);
        throw error;
      }
      await loadTracing();
      tagVersion(found, readEnvironment(path), this.#usage);
    } else {
      throw errorForAnswer(answer, production);
    }
    this.#cache.put(key, name, found, etag, generation);
    if (answer.status === 200 && this.#store !== null) {
      this.#items.set(key, { prompt: name, path, version: body });
      this.#save();
    }
    return found;
  }

  /** GET `path` with a token and retries, conditional on `etag` (or POST `body`, JSON,
   * never retried: the service may have counted it); one fresh token and one retry
   * after a 401. Returns any answer but a 5xx, which it throws as ServerError. */
  async #call(path: string, etag: string | null, body?: string): Promise<Answer> {
    const deadline = this.#policy.deadline();
    const url = this.baseUrl + path;
    const policy = body === undefined ? this.#policy : new RetryPolicy(this.#policy.timeout, 0);
    let stale: string | null = null;
    for (;;) {
      const token = await this.#auth.token(this.#fetch, this.#policy, deadline, stale);
      const build = (): Outgoing => {
        const headers = requestHeaders(token);
        if (etag !== null) headers["If-None-Match"] = etag;
        if (body === undefined) return { url, method: "GET", headers };
        headers["Content-Type"] = "application/json";
        return { url, method: "POST", headers, body };
      };
      const answer = await sendWithRetries(this.#fetch, build, policy, deadline);
      if (answer.status >= 500) throw errorForAnswer(answer);
      if (answer.status !== 401 || stale !== null) return answer;
      stale = token; // refused (expired early, key rotated): refresh once, retry once
    }
  }
}
