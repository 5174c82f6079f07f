/**
 * Sending one request: the SDK's headers, a time budget per call, and retries of
 * transport errors and 5xx answers only (docs/api.md section 13).
 */

import { type Answer, TransportError } from "./errors.js";
import { VERSION } from "./version.js";

export const USER_AGENT = `promptsvc-typescript/${VERSION}`;

/** The `fetch` the client calls: the global one, or any with its signature (tests, proxies). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** The headers of every SDK request, with a fresh X-Request-ID. */
export function requestHeaders(token?: string): Record<string, string> {
  const headers: Record<string, string> = {
    Accept: "application/json",
    "User-Agent": USER_AGENT,
    "X-Request-ID": crypto.randomUUID(),
  };
  if (token !== undefined) headers["Authorization"] = `Bearer ${token}`;
  return headers;
}

/** Seconds on a monotonic clock. */
export const monotonic = (): number => performance.now() / 1000;

/**
 * Retry transport errors and 5xx answers, never 4xx, inside one time budget.
 *
 * `maxRetries` counts attempts after the first. Before retry `n` (from 0) the call waits
 * a random time between half and all of `min(backoffCap, backoff * 2 ** n)` seconds,
 * and gives up instead when that wait would reach past the call's deadline.
 */
export class RetryPolicy {
  constructor(
    readonly timeout = 10,
    readonly maxRetries = 2,
    readonly backoff = 0.25,
    readonly backoffCap = 4,
    readonly jitter: () => number = Math.random,
  ) {}

  delay(retry: number): number {
    const ceiling = Math.min(this.backoffCap, this.backoff * 2 ** retry);
    return ceiling / 2 + (ceiling / 2) * this.jitter();
  }

  /** The monotonic time by which a call started now must be done. */
  deadline(): number {
    return monotonic() + this.timeout;
  }
}

export interface Outgoing {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
}

export function sleep(seconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, seconds * 1000);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * One attempt: `fetch` with what is left of the budget as its timeout, the body read
 * whole. Throws TransportError when no answer came.
 */
export async function attempt(fetcher: FetchLike, out: Outgoing, deadline: number): Promise<Answer> {
  const remaining = Math.max(deadline - monotonic(), 0.001);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), remaining * 1000);
  const sentRequestId = out.headers["X-Request-ID"] ?? "";
  try {
    const init: RequestInit = { method: out.method, headers: out.headers, signal: controller.signal };
    if (out.body !== undefined) init.body = out.body;
    const response = await fetcher(out.url, init);
    const body = await response.text();
    return { status: response.status, statusText: response.statusText, headers: response.headers, body, sentRequestId };
  } catch (error) {
    const timedOut = controller.signal.aborted;
    const what = timedOut ? `no answer within ${remaining.toFixed(3)} s` : describe(error);
    throw new TransportError(`${what} (${out.method} ${out.url})`, {
      code: timedOut ? "timeout" : "transport",
      requestId: sentRequestId || null,
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.name}: ${error.message}${cause}`;
}

/**
 * Send `build()` until a non-5xx answer comes, retrying as `policy` says; each attempt
 * is a new request with its own X-Request-ID. Returns the last answer (maybe a 5xx);
 * throws TransportError when the last attempt got none or the budget is spent.
 */
export async function sendWithRetries(
  fetcher: FetchLike,
  build: () => Outgoing,
  policy: RetryPolicy,
  deadline: number,
): Promise<Answer> {
  for (let retry = 0; ; retry++) {
    if (monotonic() >= deadline) {
      throw new TransportError(`no answer within the ${policy.timeout} s time budget`, { code: "timeout" });
    }
    let answer: Answer | undefined;
    let failure: TransportError | undefined;
    try {
      answer = await attempt(fetcher, build(), deadline);
      if (answer.status < 500) return answer;
    } catch (error) {
      if (!(error instanceof TransportError)) throw error;
      failure = error;
    }
    const delay = policy.delay(retry);
    if (retry >= policy.maxRetries || monotonic() + delay >= deadline) {
      if (failure !== undefined) throw failure;
      return answer as Answer;
    }
    await sleep(delay);
  }
}
