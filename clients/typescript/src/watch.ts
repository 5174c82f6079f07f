/**
 * `watch: true`: follow the org's change events (docs/api.md section 14) so a cached
 * version never outlives a change by more than the time an event takes to arrive.
 *
 * One stream per client, read in the background:
 *
 * - before its first stream it asks the long poll (`?wait=0`) for the newest event's id
 *   and clears the cache, so every later change is in the stream or in what is fetched
 *   next; every (re)connection sends `Last-Event-ID` and the service replays what the
 *   client missed;
 * - an event naming a prompt drops that prompt's entries (by the name and the `pmt_` id
 *   it carries); `reset` (the client was away longer than the log keeps) clears the cache;
 * - the stream ends at its token's expiry, or on any failure; the next attempt waits the
 *   reconnect backoff (about 0.1 s, doubling with each failure up to 10 s, back to 0.1 s
 *   after a healthy stream), or the refusal's Retry-After when longer (at most 60 s), and
 *   asks the token provider again, so a fresh token replaces an expired one; a token the
 *   stream refuses is refreshed and tried again at once, once.
 */

import type { PromptCache } from "./cache.js";
import { type Answer, errorForAnswer, InvalidResponseError, invalidResponse, isRecord, jsonOf } from "./errors.js";
import { type FetchLike, monotonic, RetryPolicy, requestHeaders, sleep } from "./http.js";
import { type ServerSentEvent, SseParser } from "./sse.js";

export const EVENTS_PATH = "/api/v1/events";
const EVENT_STREAM = "text/event-stream";
/** The service sends a line at least every 15 s: three missed means the connection is dead. */
const READ_TIMEOUT = 45;
/** A stream open this long counts as healthy: the next one starts without backoff. */
const HEALTHY_SECONDS = 1;
const RECONNECT = new RetryPolicy(10, 0, 0.1, 10);
/** The most of a refusal's Retry-After that is honoured. */
const RETRY_AFTER_CAP = 60;

export interface WatchDeps {
  baseUrl: string;
  cache: PromptCache;
  fetch: FetchLike;
  /** A valid token; a fresh one when `stale` is the held one. */
  token: (stale: string | null) => Promise<string>;
  /** The answer of GET `path` through the client (token, retries). */
  get: (path: string) => Promise<Answer>;
  warn: (message: string) => void;
  reconnect?: RetryPolicy;
  readTimeout?: number;
}

export class Watcher {
  /** The id of the last event applied: what the next connection resumes after. */
  lastId: string | null = null;
  /** Whether the stream is open now. */
  connected = false;
  #stale: string | null = null; // the token the stream last refused
  #stopped = false;
  #abort = new AbortController();
  #loop: Promise<void> | null = null;
  #openedAt = 0;
  #failures = 0;
  #retryNow = false;
  #retryAfter = 0;

  constructor(private readonly deps: WatchDeps) {}

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stop following and wait until the stream is closed. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      let failure: unknown = null;
      try {
        await this.#follow();
      } catch (error) {
        failure = error;
      }
      this.connected = false;
      if (this.#stopped) break;
      if (failure !== null) this.deps.warn(`promptsvc: events stream failed, reconnecting: ${String(failure)}`);
      await sleep(this.#ended(), this.#abort.signal);
    }
  }

  async #position(): Promise<void> {
    const answer = await this.deps.get(`${EVENTS_PATH}?wait=0`);
    if (answer.status !== 200) throw errorForAnswer(answer);
    const body = jsonOf(answer);
    const lastId = isRecord(body) ? body["last_id"] : undefined;
    if (typeof lastId !== "string" || lastId === "") throw invalidResponse(answer, "events answer without last_id");
    this.deps.cache.clear();
    this.lastId = lastId;
  }

  async #follow(): Promise<void> {
    if (this.lastId === null) await this.#position();
    const token = await this.deps.token(this.#stale);
    const headers: Record<string, string> = { ...requestHeaders(token), Accept: EVENT_STREAM, "Cache-Control": "no-store" };
    if (this.lastId !== null) headers["Last-Event-ID"] = this.lastId;
    const stream = new AbortController();
    const stop = (): void => stream.abort();
    this.#abort.signal.addEventListener("abort", stop, { once: true });
    const idle = this.deps.readTimeout ?? READ_TIMEOUT;
    let timer = setTimeout(stop, idle * 1000);
    try {
      const response = await this.deps.fetch(this.deps.baseUrl + EVENTS_PATH, {
        method: "GET",
        headers,
        signal: stream.signal,
      });
      if (!this.#opened(response, token, await this.#refusal(response, headers["X-Request-ID"] ?? ""))) return;
      const parser = new SseParser((event) => this.#apply(event));
      const decoder = new TextDecoder();
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          clearTimeout(timer);
          timer = setTimeout(stop, idle * 1000);
          parser.feed(decoder.decode(value, { stream: true }));
        }
      } finally {
        reader.cancel().catch(() => undefined);
      }
    } finally {
      clearTimeout(timer);
      this.#abort.signal.removeEventListener("abort", stop);
    }
  }

  /** A non-200 answer read whole, for the error; null for a 200. */
  async #refusal(response: Response, sentRequestId: string): Promise<Answer | null> {
    if (response.status === 200) return null;
    const body = await response.text();
    return { status: response.status, statusText: response.statusText, headers: response.headers, body, sentRequestId };
  }

  /** Whether the stream is open; false when `token` was refused and is to be refreshed
   * and tried again now. Throws the error of any other refusal. */
  #opened(response: Response, token: string, refusal: Answer | null): boolean {
    if (refusal !== null) {
      if (refusal.status === 401) {
        this.#retryNow = this.#stale === null; // once; then back off
        this.#stale = token;
        if (this.#retryNow) return false;
      }
      this.#retryAfter = retryAfter(refusal.headers);
      throw errorForAnswer(refusal);
    }
    const type = (response.headers.get("Content-Type") ?? "").split(";")[0]?.trim();
    if (type !== EVENT_STREAM || response.body === null) {
      response.body?.cancel().catch(() => undefined);
      throw new InvalidResponseError("unexpected response body: events answer is not text/event-stream", {
        status: 200,
        code: "invalid_response",
        requestId: response.headers.get("X-Request-ID"),
      });
    }
    this.#stale = null;
    this.connected = true;
    this.#openedAt = monotonic();
    return true;
  }

  #apply(event: ServerSentEvent): void {
    if (event.type === "reset") {
      this.deps.cache.clear();
    } else if (event.data !== "") {
      let body: unknown;
      try {
        body = JSON.parse(event.data);
      } catch {
        this.deps.warn(`promptsvc: unreadable event ${event.id}: clearing the cache`);
        this.deps.cache.clear();
      }
      if (isRecord(body)) {
        const refs = [body["prompt_name"], body["prompt_id"]].filter((r): r is string => typeof r === "string");
        this.deps.cache.drop(refs);
      }
    }
    if (event.id !== "") this.lastId = event.id;
  }

  /** Seconds to wait before the next attempt. */
  #ended(): number {
    const healthy = this.#openedAt > 0 && monotonic() - this.#openedAt >= HEALTHY_SECONDS;
    this.#openedAt = 0;
    if (this.#retryNow) {
      this.#retryNow = false;
      return 0;
    }
    if (healthy) this.#failures = 0;
    const delay = Math.max((this.deps.reconnect ?? RECONNECT).delay(this.#failures), this.#retryAfter);
    this.#failures += 1;
    this.#retryAfter = 0;
    return delay;
  }
}

function retryAfter(headers: Headers): number {
  const value = (headers.get("Retry-After") ?? "").trim();
  return /^\d+$/.test(value) ? Math.min(Number(value), RETRY_AFTER_CAP) : 0;
}
