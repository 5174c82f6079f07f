/** PromptClient on a fake fetch: resolution, tokens, cache, revalidation, failures, fallback. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  AuthenticationError,
  InvalidResponseError,
  NoProductionVersionError,
  NotFoundError,
  PermissionDeniedError,
  PromptClient,
  type PromptClientOptions,
  PromptServiceError,
  ServerError,
  TransportError,
  VERSION,
} from "../../src/index.js";
import { error, eventually, FakeClock, FakeService, versionBody, Warnings } from "../support/fake-service.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function setup(options: Partial<PromptClientOptions> = {}) {
  const service = new FakeService();
  const clock = new FakeClock();
  const warnings = new Warnings();
  const client = new PromptClient({
    baseUrl: "http://svc.test/",
    accountId: "acme",
    keyId: "k",
    keySecret: "s",
    fetch: service.fetch,
    clock: clock.read,
    logger: warnings,
    retryBackoff: 0.001,
    ...options,
  });
  return { service, clock, warnings, client };
}

describe("resolution", () => {
  test("production by default, latest, a version id or number, an environment", async () => {
    const { service, client } = setup();
    service.bodies.set("greeting/latest", versionBody({ version: 2, version_id: "v_2", status: "draft", is_production: false }));
    service.bodies.set("greeting/versions/v_1", versionBody());
    service.bodies.set("greeting/versions/1", versionBody());
    service.bodies.set("greeting/environments/staging", versionBody());
    assert.equal((await client.getPromptVersion("greeting")).version, 1);
    assert.equal((await client.getPromptVersion("greeting", { label: "production" })).version, 1);
    assert.equal((await client.getPromptVersion("greeting", { label: "latest" })).status, "draft");
    assert.equal((await client.getPromptVersion("greeting", { version: "v_1" })).version_id, "v_1");
    assert.equal((await client.getPromptVersion("greeting", { version: 1 })).version_id, "v_1");
    assert.equal((await client.getPromptVersion("greeting", { label: "staging" })).version, 1);
    const paths = service.requests("/api/v1/prompts/").map((s) => s.path);
    assert.deepEqual(paths, [
      "/api/v1/prompts/greeting/production",
      "/api/v1/prompts/greeting/latest",
      "/api/v1/prompts/greeting/versions/v_1",
      "/api/v1/prompts/greeting/versions/1",
      "/api/v1/prompts/greeting/environments/staging",
    ]);
  });

  test("names are percent-encoded into one path segment", async () => {
    const { service, client } = setup();
    await assert.rejects(client.getPromptVersion("a/b c"), NotFoundError);
    assert.equal(service.requests("/prompts/")[0]?.path, "/api/v1/prompts/a%2Fb%20c/production");
  });

  test("bad arguments reject with TypeError before any request", async () => {
    const { service, client } = setup();
    await assert.rejects(client.getPromptVersion("greeting", { label: "latest", version: "v_1" }), TypeError);
    await assert.rejects(client.getPromptVersion("greeting", { label: "Bad Label" }), TypeError);
    await assert.rejects(client.getPromptVersion("greeting", { version: "latest" }), TypeError);
    await assert.rejects(client.getPromptVersion("", {}), TypeError);
    await assert.rejects(client.getPromptVersion("greeting", { version: 1.5 }), TypeError);
    assert.equal(service.seen.length, 0);
  });

  test("options are checked when the client is made", () => {
    assert.throws(() => new PromptClient({ baseUrl: "http://x", accountId: "a", keyId: "k" }), TypeError);
    assert.throws(() => new PromptClient({ baseUrl: "http://x", accountId: "a", keyId: "k", keySecret: "s", cacheTtl: -1 }), RangeError);
    assert.throws(() => new PromptClient({ baseUrl: "http://x", accountId: "a", keyId: "k", keySecret: "s", timeout: 0 }), RangeError);
  });

  test("fromEnv reads the four variables and names the missing ones", async () => {
    const service = new FakeService();
    const env = { PROMPTSVC_URL: "http://svc.test", PROMPTSVC_ACCOUNT_ID: "acme", PROMPTSVC_KEY_ID: "k", PROMPTSVC_KEY_SECRET: "s" };
    const client = PromptClient.fromEnv(env, { fetch: service.fetch });
    assert.equal((await client.getPromptVersion("greeting")).version, 1);
    assert.deepEqual(JSON.parse(service.seen[0]?.body ?? ""), { account_id: "acme", key_id: "k", key_secret: "s" });
    assert.throws(() => PromptClient.fromEnv({ PROMPTSVC_URL: "http://x" }), /PROMPTSVC_ACCOUNT_ID, PROMPTSVC_KEY_ID, PROMPTSVC_KEY_SECRET/);
  });
});

describe("headers", () => {
  test("every request, the token exchange included, carries the SDK headers and its own X-Request-ID", async () => {
    const { service, client } = setup({ cacheTtl: 0 });
    await client.getPromptVersion("greeting");
    await client.getPromptVersion("greeting");
    const [exchange, ...reads] = service.seen;
    assert.ok(exchange !== undefined && reads.length === 2);
    for (const seen of service.seen) {
      assert.equal(seen.headers["accept"], "application/json");
      assert.equal(seen.headers["user-agent"], `promptsvc-typescript/${VERSION}`);
      assert.match(seen.headers["x-request-id"] ?? "", UUID);
    }
    assert.equal(exchange.headers["authorization"], undefined);
    assert.equal(exchange.headers["content-type"], "application/json");
    for (const read of reads) assert.equal(read.headers["authorization"], "Bearer token-1");
    assert.equal(new Set(service.seen.map((s) => s.headers["x-request-id"])).size, 3);
  });
});

describe("tokens", () => {
  test("one token serves calls until refreshBuffer before expires_in, then a new one", async () => {
    const { service, clock, client } = setup({ cacheTtl: 0, tokenRefreshBuffer: 60 });
    await client.getPromptVersion("greeting");
    clock.advance(239);
    await client.getPromptVersion("greeting");
    assert.equal(service.tokensIssued, 1);
    clock.advance(1);
    await client.getPromptVersion("greeting");
    assert.equal(service.tokensIssued, 2);
    assert.equal(service.requests("/prompts/").at(-1)?.headers["authorization"], "Bearer token-2");
  });

  test("an answer without expires_in is used once and replaced on the next call", async () => {
    const { service, client } = setup({ cacheTtl: 0 });
    service.tokenLifetime = undefined;
    await client.getPromptVersion("greeting");
    await client.getPromptVersion("greeting");
    assert.equal(service.tokensIssued, 2);
  });

  test("concurrent calls share one token exchange and one fetch", async () => {
    const { service, client } = setup();
    const got = await Promise.all(Array.from({ length: 20 }, () => client.getPromptVersion("greeting")));
    assert.equal(service.tokensIssued, 1);
    assert.equal(service.requests("/prompts/").length, 1);
    assert.ok(got.every((v) => v === got[0]));
  });

  test("a 401 gets one fresh token and one retry", async () => {
    const { service, client } = setup();
    await client.getPromptVersion("greeting", { label: "production" });
    service.validTokens.clear(); // the key was rotated: the held token is refused
    client.clearCache();
    assert.equal((await client.getPromptVersion("greeting")).version, 1);
    assert.equal(service.tokensIssued, 2);
  });

  test("a second 401 is an AuthenticationError with the answer's code and request id", async () => {
    const { service, client } = setup();
    service.script("/prompts/", () => error(401, "unauthorized", "unauthorized"));
    service.script("/prompts/", () => error(401, "unauthorized", "unauthorized"));
    const failure = await client.getPromptVersion("greeting").catch((e: unknown) => e);
    assert.ok(failure instanceof AuthenticationError);
    assert.equal(failure.status, 401);
    assert.equal(failure.code, "unauthorized");
    assert.equal(failure.requestId, "srv-rid");
    assert.equal(service.tokensIssued, 2);
  });

  test("a refused key is an AuthenticationError from the token endpoint, not retried", async () => {
    const { service, client } = setup();
    service.script("/v1/auth/sdk-token", () => error(401, "unauthorized", "invalid credentials"));
    await assert.rejects(client.getPromptVersion("greeting"), (e: unknown) => e instanceof AuthenticationError && e.message === "invalid credentials");
    assert.equal(service.seen.length, 1);
  });

  test("client credentials post the form to the realm and refresh 30 s before expiry", async () => {
    const service = new FakeService();
    const clock = new FakeClock();
    const client = PromptClient.withClientCredentials({
      baseUrl: "http://svc.test",
      authUrl: "http://idp.test/",
      org: "acme",
      clientId: "cid",
      clientSecret: "sec ret",
      fetch: service.fetch,
      clock: clock.read,
      cacheTtl: 0,
    });
    await client.getPromptVersion("greeting");
    const [exchange] = service.seen;
    assert.equal(exchange?.url, "http://idp.test/realms/acme/protocol/openid-connect/token");
    assert.equal(exchange?.headers["content-type"], "application/x-www-form-urlencoded");
    assert.equal(exchange?.body, "grant_type=client_credentials&client_id=cid&client_secret=sec+ret");
    clock.advance(269);
    await client.getPromptVersion("greeting");
    assert.equal(service.tokensIssued, 1);
    clock.advance(1);
    await client.getPromptVersion("greeting");
    assert.equal(service.tokensIssued, 2);
  });
});

describe("cache", () => {
  test("a hit makes no request; the TTL is honoured; clearCache drops everything", async () => {
    const { service, clock, client } = setup({ cacheTtl: 10 });
    const first = await client.getPromptVersion("greeting");
    clock.advance(9.9);
    assert.equal(await client.getPromptVersion("greeting"), first);
    assert.equal(service.requests("/prompts/").length, 1);
    client.clearCache();
    await client.getPromptVersion("greeting");
    assert.equal(service.requests("/prompts/").length, 2);
  });

  test("keys follow prompt:<name>:<label or version>: production and no label share one", async () => {
    const { service, client } = setup();
    service.bodies.set("greeting/latest", versionBody());
    await client.getPromptVersion("greeting");
    await client.getPromptVersion("greeting", { label: "production" });
    await client.getPromptVersion("greeting", { label: "latest" });
    await client.getPromptVersion("greeting", { label: "latest" });
    assert.equal(service.requests("/prompts/").length, 2);
  });

  test("cacheTtl 0 asks every time", async () => {
    const { service, client } = setup({ cacheTtl: 0 });
    await client.getPromptVersion("greeting");
    await client.getPromptVersion("greeting");
    assert.equal(service.requests("/prompts/").length, 2);
  });

  test("an expired entry is revalidated with If-None-Match; a 304 renews it", async () => {
    const { service, clock, client } = setup({ cacheTtl: 10 });
    const first = await client.getPromptVersion("greeting");
    clock.advance(10);
    const again = await client.getPromptVersion("greeting");
    const [, second] = service.requests("/prompts/");
    assert.match(second?.headers["if-none-match"] ?? "", /^"v_1-[0-9a-f]+"$/);
    assert.equal(again, first);
    await client.getPromptVersion("greeting");
    assert.equal(service.requests("/prompts/").length, 2, "the 304 renewed the entry");
  });

  test("a changed version comes back whole after expiry", async () => {
    const { service, clock, client } = setup({ cacheTtl: 10 });
    await client.getPromptVersion("greeting");
    service.bodies.set("greeting/production", versionBody({ version: 2, version_id: "v_2" }));
    clock.advance(10);
    assert.equal((await client.getPromptVersion("greeting")).version, 2);
  });

  test("a clear during a fetch keeps the fetched version out of the cache", async () => {
    const { service, client } = setup();
    let release = (): void => undefined;
    service.script("/prompts/", () => new Promise<Response>((r) => (release = () => r(Response.json(versionBody())))));
    const pending = client.getPromptVersion("greeting");
    await eventually(() => service.requests("/prompts/").length === 1);
    client.clearCache();
    release();
    assert.equal((await pending).version, 1, "the caller still gets what was fetched");
    await client.getPromptVersion("greeting");
    assert.equal(service.requests("/prompts/").length, 2);
  });
});

describe("failures", () => {
  test("5xx and transport errors are retried, 4xx never", async () => {
    const { service, client } = setup();
    service.script("/prompts/", () => error(503, "service_unavailable", "down"));
    service.script("/prompts/", () => new TypeError("fetch failed"));
    assert.equal((await client.getPromptVersion("greeting")).version, 1);
    assert.equal(service.requests("/prompts/").length, 3);
    const ids = service.requests("/prompts/").map((s) => s.headers["x-request-id"]);
    assert.equal(new Set(ids).size, 3, "each attempt has its own X-Request-ID");
    service.script("/prompts/", () => error(400, "bad_request", "no"));
    client.clearCache();
    await assert.rejects(client.getPromptVersion("greeting"), (e: unknown) => e instanceof PromptServiceError && e.status === 400 && e.code === "bad_request");
    assert.equal(service.requests("/prompts/").length, 4);
  });

  test("errors map by status", async () => {
    const { service, client } = setup({ maxRetries: 0 });
    const cases: Array<[Response, new (...a: never[]) => PromptServiceError]> = [
      [error(403, "forbidden", "forbidden"), PermissionDeniedError],
      [error(404, "not_found", "prompt 'greeting' not found"), NotFoundError],
      [
        Response.json(
          { code: "not_found", message: "prompt 'greeting' has no production version", error: "not_found", reason: "no_production_version" },
          { status: 404 },
        ),
        NoProductionVersionError,
      ],
      [error(500, "internal_server_error", "boom"), ServerError],
      [error(429, "too_many_requests", "slow down"), PromptServiceError],
      [new Response("<html>", { status: 502, statusText: "Bad Gateway" }), ServerError],
    ];
    for (const [answer, cls] of cases) {
      service.script("/prompts/", () => answer);
      const failure = await client.getPromptVersion("greeting").catch((e: unknown) => e);
      assert.ok(failure instanceof cls, `${answer.status} gives ${cls.name}`);
      assert.equal(failure.status, answer.status);
      assert.equal(failure.name, cls.name);
    }
    service.script("/prompts/", () => new Response("<html>", { status: 502, statusText: "Bad Gateway" }));
    const gateway = await client.getPromptVersion("greeting").catch((e: unknown) => e);
    assert.ok(gateway instanceof ServerError);
    assert.equal(gateway.code, "http_502");
    assert.equal(gateway.message, "Bad Gateway");
  });

  test("a 404 on a non-production read is a NotFoundError, not NoProductionVersionError", async () => {
    const { client } = setup();
    const failure = await client.getPromptVersion("greeting", { label: "latest" }).catch((e: unknown) => e);
    assert.ok(failure instanceof NotFoundError && !(failure instanceof NoProductionVersionError));
    assert.equal(failure.message, "prompt 'greeting' not found");
  });

  test("no answer is a TransportError with the request's id; a timeout says so", async () => {
    const { service, client } = setup({ maxRetries: 1 });
    await client.getPromptVersion("greeting", { label: "production" }); // token held
    client.clearCache();
    service.script("/prompts/", () => new TypeError("fetch failed"));
    service.script("/prompts/", () => new TypeError("fetch failed"));
    const failure = await client.getPromptVersion("greeting").catch((e: unknown) => e);
    assert.ok(failure instanceof TransportError);
    assert.equal(failure.status, null);
    assert.equal(failure.code, "transport");
    assert.match(failure.requestId ?? "", UUID);

    const slow = new FakeService();
    const client2 = new PromptClient({
      baseUrl: "http://svc.test",
      accountId: "a",
      keyId: "k",
      keySecret: "s",
      timeout: 0.2,
      fetch: (url, init) => (url.includes("/prompts/") ? hang(init.signal) : slow.fetch(url, init)),
    });
    const started = performance.now();
    const timedOut = await client2.getPromptVersion("greeting").catch((e: unknown) => e);
    assert.ok(timedOut instanceof TransportError);
    assert.equal(timedOut.code, "timeout");
    assert.ok(performance.now() - started < 1000, "the whole call stays within its budget");
  });

  test("a 200 that is not a PromptVersion is an InvalidResponseError naming the field", async () => {
    const { service, client } = setup();
    service.script("/prompts/", () => Response.json({ ...versionBody(), version: "1" }));
    await assert.rejects(client.getPromptVersion("greeting"), (e: unknown) => e instanceof InvalidResponseError && /'version'/.test(e.message));
  });
});

describe("stale-if-error and fallback", () => {
  test("an expired entry is served when the service fails, with a warning", async () => {
    const { service, clock, client, warnings } = setup({ cacheTtl: 10, maxRetries: 0 });
    const first = await client.getPromptVersion("greeting");
    clock.advance(11);
    service.script("/prompts/", () => error(503, "service_unavailable", "down"));
    assert.equal(await client.getPromptVersion("greeting"), first);
    service.script("/prompts/", () => new TypeError("fetch failed"));
    assert.equal(await client.getPromptVersion("greeting"), first);
    assert.equal(warnings.messages.length, 2);
    assert.match(warnings.messages[0] ?? "", /serving expired prompt:greeting:production/);
  });

  test("staleIfError false throws instead; 4xx always throws", async () => {
    const { service, clock, client } = setup({ cacheTtl: 10, maxRetries: 0, staleIfError: false });
    await client.getPromptVersion("greeting");
    clock.advance(11);
    service.script("/prompts/", () => error(503, "service_unavailable", "down"));
    await assert.rejects(client.getPromptVersion("greeting"), ServerError);
    const other = setup({ cacheTtl: 10 });
    await other.client.getPromptVersion("greeting");
    other.clock.advance(11);
    other.service.bodies.delete("greeting/production");
    await assert.rejects(other.client.getPromptVersion("greeting"), NotFoundError);
  });

  test("fallback is served when nothing is cached and the service cannot answer; never cached", async () => {
    const { service, client, warnings } = setup({ maxRetries: 0 });
    service.script("/v1/auth/sdk-token", () => new TypeError("fetch failed"));
    const spare = await client.getPromptVersion("greeting", { fallback: "Hi {{name}}" });
    assert.equal(spare.is_fallback, true);
    assert.equal(spare.version, 0);
    assert.equal(spare.status, "fallback");
    assert.equal(spare.version_id, "");
    assert.deepEqual(spare.variables, ["name"]);
    assert.equal(spare.render({ name: "Ada" }), "Hi Ada");
    assert.match(warnings.messages[0] ?? "", /fallback/);
    const real = await client.getPromptVersion("greeting", { fallback: "Hi {{name}}" });
    assert.equal(real.is_fallback, false);
  });

  test("fallback chat messages make a chat version; 404 still rejects", async () => {
    const { service, client } = setup({ maxRetries: 0 });
    service.script("/prompts/", () => error(500, "internal_server_error", "boom"));
    const chat = await client.getPromptVersion("greeting", { fallback: [{ role: "system", content: "Be {{tone}}" }] });
    assert.equal(chat.prompt_type, "chat");
    assert.deepEqual(chat.render({ tone: "kind" }), [{ role: "system", content: "Be kind" }]);
    await assert.rejects(client.getPromptVersion("missing", { fallback: "x" }), NotFoundError);
  });
});

describe("returned versions", () => {
  test("keep the API's field names, are frozen, and carry the implied schema", async () => {
    const { client } = setup();
    const v = await client.getPromptVersion("greeting");
    assert.equal(v.version_id, "v_1");
    assert.equal(v.is_production, true);
    assert.equal(v.is_fallback, false);
    assert.equal(v.promoted_at, "2026-01-02T03:04:05Z");
    assert.deepEqual(v.variables_schema, { name: { type: "string", required: true } });
    assert.deepEqual(v.examples, []);
    assert.equal(v.rollout, null);
    assert.ok(Object.isFrozen(v) && Object.isFrozen(v.metadata) && Object.isFrozen(v.tags));
    assert.throws(() => {
      (v.metadata as Record<string, unknown>)["model"] = "other";
    }, TypeError);
  });
});

function hang(signal: AbortSignal | null | undefined): Promise<Response> {
  return new Promise((_, reject) => signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
}
