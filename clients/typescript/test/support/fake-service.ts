/**
 * A fake promptsvc behind a fake `fetch`, for unit tests of what no real server can show
 * on demand (a 5xx on the third request, a rollout before the server has rollouts, a
 * stream cut mid-frame). It issues tokens, answers the read endpoints with ETags and
 * 304s, streams events the test writes, and records every request.
 */

import type { FetchLike } from "../../src/index.js";

export interface Seen {
  url: string;
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  /** performance.now() when it was sent, ms. */
  at: number;
}

/** A one-shot answer to the next request matching `path` (a substring): a Response, or an Error to throw. */
type Scripted = { path: string; answer: (seen: Seen) => Response | Error | Promise<Response> };

export const VERSION_BODY = {
  prompt_id: "pmt_1",
  version_id: "v_1",
  name: "greeting",
  version: 1,
  content: "Hello {{name}}!",
  variables: ["name"],
  status: "published",
  is_production: true,
  prompt_type: "text",
  metadata: { model: "m" },
  tags: ["t"],
  created_at: "2026-01-02T03:04:05Z",
  updated_at: "2026-01-02T03:04:05Z",
  promoted_at: "2026-01-02T03:04:05Z",
  promoted_by: "u",
};

export function versionBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...VERSION_BODY, ...overrides };
}

export class EventStream {
  readonly #encoder = new TextEncoder();
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  readonly body = new ReadableStream<Uint8Array>({
    start: (controller) => {
      this.#controller = controller;
    },
  });

  write(text: string): void {
    this.#controller?.enqueue(this.#encoder.encode(text));
  }

  event(id: string, type: string, data: unknown): void {
    this.write(`id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  end(): void {
    try {
      this.#controller?.close();
    } catch {
      // already closed or cancelled by the reader
    }
  }
}

export class FakeService {
  readonly seen: Seen[] = [];
  /** Versions by the read path's tail: "greeting/production", "greeting/versions/v_1", ... */
  readonly bodies = new Map<string, Record<string, unknown>>();
  readonly scripted: Scripted[] = [];
  readonly streams: EventStream[] = [];
  /** The items of every `POST /api/v1/usage` answered 202. */
  readonly usage: unknown[] = [];
  tokenLifetime: number | undefined = 300;
  validTokens = new Set<string>();
  #issued = 0;
  lastEventId = "5-0";

  constructor() {
    this.bodies.set("greeting/production", versionBody());
  }

  /** The next request whose path contains `path` gets `answer` instead. */
  script(path: string, answer: (seen: Seen) => Response | Error | Promise<Response>): void {
    this.scripted.push({ path, answer });
  }

  requests(path: string): Seen[] {
    return this.seen.filter((s) => s.path.includes(path));
  }

  get tokensIssued(): number {
    return this.#issued;
  }

  readonly fetch: FetchLike = async (input, init) => {
    const url = new URL(input);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, key) => {
      headers[key] = value;
    });
    const seen: Seen = {
      url: input,
      path: url.pathname + url.search,
      method: init.method ?? "GET",
      headers,
      body: typeof init.body === "string" ? init.body : "",
      at: performance.now(),
    };
    this.seen.push(seen);
    const i = this.scripted.findIndex((s) => seen.path.includes(s.path));
    if (i !== -1) {
      const [{ answer }] = this.scripted.splice(i, 1) as [Scripted];
      const outcome = answer(seen);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    }
    return this.#answer(seen, url, init.signal ?? null);
  };

  #answer(seen: Seen, url: URL, signal: AbortSignal | null): Response {
    if (seen.method === "POST" && (url.pathname === "/v1/auth/sdk-token" || url.pathname.endsWith("/openid-connect/token"))) {
      this.#issued += 1;
      const token = `token-${this.#issued}`;
      this.validTokens.add(token);
      const body: Record<string, unknown> = { access_token: token, token_type: "Bearer" };
      if (this.tokenLifetime !== undefined) body["expires_in"] = this.tokenLifetime;
      return Response.json(body);
    }
    const token = (seen.headers["authorization"] ?? "").replace(/^Bearer /, "");
    if (!this.validTokens.has(token)) return error(401, "unauthorized", "unauthorized");
    if (seen.method === "POST" && url.pathname === "/api/v1/usage") {
      const items = (JSON.parse(seen.body) as { items: unknown[] }).items;
      this.usage.push(...items);
      return Response.json({ accepted: items.length, skipped: 0 }, { status: 202 });
    }
    if (url.pathname === "/api/v1/events") {
      if (seen.headers["accept"] !== "text/event-stream") return Response.json({ items: [], last_id: this.lastEventId, reset: false });
      const stream = new EventStream();
      this.streams.push(stream);
      signal?.addEventListener("abort", () => stream.end());
      return new Response(stream.body, { headers: { "Content-Type": "text/event-stream" } });
    }
    const tail = decodeURIComponent(url.pathname.replace(/^\/api\/v1\/prompts\//, ""));
    const body = this.bodies.get(tail);
    if (body === undefined) return error(404, "not_found", `prompt '${tail.split("/")[0]}' not found`);
    const etag = `"${body["version_id"]}-${hash(JSON.stringify(body))}"`;
    if (seen.headers["if-none-match"] === etag) return new Response(null, { status: 304, headers: { ETag: etag } });
    return Response.json(body, { headers: { ETag: etag, "X-Request-ID": seen.headers["x-request-id"] ?? "" } });
  }
}

export function error(status: number, code: string, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ code, message, error: code }, { status, headers: { "X-Request-ID": "srv-rid", ...headers } });
}

/** A clock the test moves: seconds. */
export class FakeClock {
  now = 1000;
  readonly read = (): number => this.now;
  advance(seconds: number): void {
    this.now += seconds;
  }
}

/** Collects the client's warnings instead of printing them. */
export class Warnings {
  readonly messages: string[] = [];
  warn(message: string): void {
    this.messages.push(message);
  }
}

/** Wait until `check()` is true, polling; fails after `seconds` (generous: on a busy
 * machine only a broken test waits that long, tests/README.md). */
export async function eventually(check: () => boolean | Promise<boolean>, seconds = 30): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

function hash(text: string): string {
  let h = 5381;
  for (let i = 0; i < text.length; i++) h = (h * 33) ^ text.charCodeAt(i);
  return (h >>> 0).toString(16);
}
