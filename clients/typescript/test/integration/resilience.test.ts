/**
 * Against a real `promptsvc serve` with 2-second tokens: refresh before expiry, a token
 * the server refuses once expired, and what the client does while the service is down
 * (stale-if-error, fallback) behind a gateway that answers 502, and once it is stopped.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { NotFoundError, PromptClient, type PromptClientOptions, ServerError, TransportError } from "../../src/index.js";
import { FakeClock, Warnings } from "../support/fake-service.js";
import { Proxy } from "../support/proxy.js";
import { Admin, KEYS, ORG, PromptService } from "../support/server.js";

const LIFETIME = 2;

let server: PromptService;
let proxy: Proxy;

function client(options: Partial<PromptClientOptions> = {}): PromptClient {
  return new PromptClient({
    baseUrl: proxy.baseUrl,
    accountId: ORG,
    keyId: KEYS.read.clientId,
    keySecret: KEYS.read.secret,
    logger: new Warnings(),
    retryBackoff: 0.01,
    ...options,
  });
}

const tokenRequests = () => proxy.seen("/v1/auth/sdk-token").length;

before(async () => {
  server = await PromptService.start({ tokenLifetime: LIFETIME });
  proxy = await Proxy.start(server.baseUrl);
  await new Admin(server.baseUrl).prompt("greeting", ["Hello {{name}}"]);
});

after(async () => {
  await proxy?.stop();
  await server?.stop();
});

test("a token is used until tokenRefreshBuffer before the server's expires_in, then replaced", async () => {
  const clock = new FakeClock();
  const c = client({ cacheTtl: 0, clock: clock.read, tokenRefreshBuffer: 0.5 });
  const start = tokenRequests();
  await c.getPromptVersion("greeting");
  await c.getPromptVersion("greeting");
  clock.advance(LIFETIME - 0.5 - 0.01);
  await c.getPromptVersion("greeting");
  assert.equal(tokenRequests(), start + 1);
  clock.advance(0.01);
  await c.getPromptVersion("greeting");
  assert.equal(tokenRequests(), start + 2);
});

test("a token the server refuses (expired on its clock) is replaced and the read retried once", async () => {
  const clock = new FakeClock(); // frozen: the client believes its token is still good
  const c = client({ cacheTtl: 0, clock: clock.read, tokenRefreshBuffer: 0 });
  await c.getPromptVersion("greeting");
  const start = tokenRequests();
  await new Promise((r) => setTimeout(r, (LIFETIME + 1) * 1000));
  assert.equal((await c.getPromptVersion("greeting")).version, 1);
  const [refused, retried] = proxy.seen("/prompts/greeting/production").slice(-2);
  assert.equal(refused?.status, 401);
  assert.match(String(refused?.responseHeaders["www-authenticate"]), /invalid_token/);
  assert.equal(retried?.status, 200);
  assert.equal(tokenRequests(), start + 1);
});

test("stale-if-error: an expired entry is served while the gateway answers 502; fallback when nothing is cached", async () => {
  const clock = new FakeClock();
  const warnings = new Warnings();
  const c = client({ cacheTtl: 10, clock: clock.read, maxRetries: 1, logger: warnings });
  const cached = await c.getPromptVersion("greeting");
  clock.advance(10);
  proxy.mode = "gateway-error";
  try {
    assert.equal(await c.getPromptVersion("greeting"), cached);
    assert.match(warnings.messages.join("\n"), /serving expired prompt:greeting:production/);
    const strict = client({ cacheTtl: 10, clock: clock.read, maxRetries: 0, staleIfError: false });
    await assert.rejects(strict.getPromptVersion("greeting"), ServerError);
    const spare = await c.getPromptVersion("greeting", { label: "latest", fallback: "Hi {{name}}" });
    assert.equal(spare.is_fallback, true);
    assert.equal(spare.render({ name: "Ada" }), "Hi Ada");
  } finally {
    proxy.mode = "pass";
  }
  const real = await c.getPromptVersion("greeting", { label: "latest", fallback: "Hi {{name}}" });
  assert.equal(real.is_fallback, false, "the fallback was not cached");
  await assert.rejects(c.getPromptVersion("missing", { fallback: "x" }), NotFoundError, "404 still rejects");
});

test("stale-if-error and fallback once the server is gone: connection refused", async () => {
  const clock = new FakeClock();
  const c = new PromptClient({
    baseUrl: server.baseUrl,
    accountId: ORG,
    keyId: KEYS.read.clientId,
    keySecret: KEYS.read.secret,
    cacheTtl: 10,
    clock: clock.read,
    maxRetries: 1,
    retryBackoff: 0.01,
    logger: new Warnings(),
  });
  const cached = await c.getPromptVersion("greeting");
  await server.stop();
  clock.advance(10);
  assert.equal(await c.getPromptVersion("greeting"), cached);
  const failure = await c.getPromptVersion("greeting", { label: "latest" }).catch((e: unknown) => e);
  assert.ok(failure instanceof TransportError);
  assert.equal(failure.code, "transport");
  const spare = await c.getPromptVersion("greeting", { label: "latest", fallback: [{ role: "user", content: "{{q}}" }] });
  assert.equal(spare.is_fallback, true);
  assert.deepEqual(spare.render({ q: "why?" }), [{ role: "user", content: "why?" }]);
});
