/**
 * Against a real `promptsvc serve` (through a recording proxy): token exchange and client
 * credentials, resolution, the SDK headers, the cache, ETag revalidation and errors.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  AuthenticationError,
  NoProductionVersionError,
  NotFoundError,
  PromptClient,
  type PromptClientOptions,
  PromptServiceError,
  VERSION,
} from "../../src/index.js";
import { FakeClock, Warnings } from "../support/fake-service.js";
import { Proxy } from "../support/proxy.js";
import { Admin, KEYS, ORG, PromptService } from "../support/server.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: PromptService;
let proxy: Proxy;
let admin: Admin;
let versions: Array<Record<string, unknown>>;
const clients: PromptClient[] = [];

function client(options: Partial<PromptClientOptions> = {}): PromptClient {
  const made = new PromptClient({
    baseUrl: proxy.baseUrl,
    accountId: ORG,
    keyId: KEYS.read.clientId,
    keySecret: KEYS.read.secret,
    logger: new Warnings(),
    ...options,
  });
  clients.push(made);
  return made;
}

before(async () => {
  server = await PromptService.start();
  proxy = await Proxy.start(server.baseUrl);
  admin = new Admin(server.baseUrl);
  versions = await admin.prompt("greeting", ["Hello {{name}}, welcome to {{product}}!", "Hi {{ name }}."]);
  await admin.ok("POST", "/prompts", { name: "unreleased" });
  await admin.ok("POST", "/prompts/unreleased/versions", { content: "draft only" });
  const chat = JSON.stringify([
    { role: "system", content: "You support {{product}}." },
    { role: "user", content: "{{question}}" },
  ]);
  await admin.prompt("support-chat", [chat], "chat");
});

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await proxy?.stop();
  await server?.stop();
});

describe("reads", () => {
  test("production, latest, a version id and a number resolve as the service says", async () => {
    const c = client();
    const production = await c.getPromptVersion("greeting");
    assert.equal(production.version, 1);
    assert.equal(production.status, "published");
    assert.equal(production.is_production, true);
    assert.equal(production.version_id, versions[0]?.["version_id"]);
    assert.deepEqual(production.variables, ["name", "product"]);
    assert.equal(production.render({ name: "Ada", product: "promptsvc" }), "Hello Ada, welcome to promptsvc!");
    const latest = await c.getPromptVersion("greeting", { label: "latest" });
    assert.equal(latest.version, 2);
    assert.equal(latest.status, "draft");
    assert.equal(latest.promoted_at, null);
    const byId = await c.getPromptVersion("greeting", { version: versions[1]?.["version_id"] as string });
    assert.equal(byId.version, 2);
    assert.equal((await c.getPromptVersion("greeting", { version: 1 })).version, 1);
    const byPromptId = await c.getPromptVersion(production.prompt_id);
    assert.equal(byPromptId.version_id, production.version_id);
  });

  test("a chat prompt renders to messages; the implied schema makes every variable a required string", async () => {
    const v = await client().getPromptVersion("support-chat");
    assert.equal(v.prompt_type, "chat");
    assert.deepEqual(v.render({ product: "promptsvc", question: 42 }), [
      { role: "system", content: "You support promptsvc." },
      { role: "user", content: "42" },
    ]);
    assert.throws(() => v.render({}), /'product': missing required variable; 'question': missing required variable/);
  });

  test("the client-credentials flow gets its token from the realm endpoint", async () => {
    const c = PromptClient.withClientCredentials({
      baseUrl: proxy.baseUrl,
      authUrl: proxy.baseUrl,
      org: ORG,
      clientId: KEYS.read.clientId,
      clientSecret: KEYS.read.secret,
      cacheTtl: 0,
    });
    clients.push(c);
    const before = proxy.exchanges.length;
    assert.equal((await c.getPromptVersion("greeting")).version, 1);
    const [exchange, read] = proxy.exchanges.slice(before);
    assert.equal(exchange?.path, `/realms/${ORG}/protocol/openid-connect/token`);
    assert.equal(exchange?.headers["content-type"], "application/x-www-form-urlencoded");
    assert.equal(exchange?.status, 200);
    assert.equal(read?.status, 200);
  });

  test("fromEnv makes a working client", async () => {
    const c = PromptClient.fromEnv({
      PROMPTSVC_URL: proxy.baseUrl,
      PROMPTSVC_ACCOUNT_ID: ORG,
      PROMPTSVC_KEY_ID: KEYS.read.clientId,
      PROMPTSVC_KEY_SECRET: KEYS.read.secret,
    });
    clients.push(c);
    assert.equal((await c.getPromptVersion("greeting")).version, 1);
  });
});

describe("headers", () => {
  test("every request, the token exchange included, has the SDK's headers and a new X-Request-ID the server echoes", async () => {
    const before = proxy.exchanges.length;
    const c = client({ cacheTtl: 0 });
    await c.getPromptVersion("greeting");
    await c.getPromptVersion("greeting", { label: "latest" });
    const seen = proxy.exchanges.slice(before);
    assert.deepEqual(seen.map((e) => e.path), ["/v1/auth/sdk-token", "/api/v1/prompts/greeting/production", "/api/v1/prompts/greeting/latest"]);
    for (const e of seen) {
      assert.equal(e.headers["accept"], "application/json");
      assert.equal(e.headers["user-agent"], `promptsvc-typescript/${VERSION}`);
      assert.match(String(e.headers["x-request-id"]), UUID);
      assert.equal(e.responseHeaders["x-request-id"], e.headers["x-request-id"], "the server echoes it");
    }
    assert.equal(seen[0]?.headers["authorization"], undefined);
    assert.match(String(seen[1]?.headers["authorization"]), /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    assert.equal(new Set(seen.map((e) => e.headers["x-request-id"])).size, 3);
  });
});

describe("cache and revalidation", () => {
  test("hits make no request; an expired entry is revalidated by ETag and the server's 304 renews it", async () => {
    const clock = new FakeClock();
    const c = client({ cacheTtl: 30, clock: clock.read });
    const first = await c.getPromptVersion("greeting");
    const reads = () => proxy.seen("/prompts/greeting/production").length;
    const start = reads();
    assert.equal(await c.getPromptVersion("greeting"), first);
    assert.equal(await c.getPromptVersion("greeting", { label: "production" }), first, "same key");
    assert.equal(reads(), start);
    clock.advance(30);
    assert.equal(await c.getPromptVersion("greeting"), first);
    const revalidation = proxy.seen("/prompts/greeting/production").at(-1);
    assert.equal(revalidation?.headers["if-none-match"], revalidation?.responseHeaders["etag"]);
    assert.equal(revalidation?.status, 304);
    await c.getPromptVersion("greeting");
    assert.equal(reads(), start + 1, "the 304 renewed the entry");
  });

  test("a promotion is served after expiry (200 with the new version), and at once after clearCache", async () => {
    await admin.prompt("farewell", ["Bye {{name}}", "Goodbye {{name}}", "Ciao {{name}}"]);
    const all = (await admin.ok("GET", "/prompts/farewell/versions")) as { items: Array<Record<string, unknown>> };
    const byNumber = (n: number) => all.items.find((v) => v["version"] === n)?.["version_id"] as string;
    const clock = new FakeClock();
    const c = client({ cacheTtl: 30, clock: clock.read });
    assert.equal((await c.getPromptVersion("farewell")).version, 1);
    await admin.promote("farewell", byNumber(2));
    assert.equal((await c.getPromptVersion("farewell")).version, 1, "cached until it expires");
    clock.advance(30);
    assert.equal((await c.getPromptVersion("farewell")).version, 2);
    assert.equal(proxy.seen("/prompts/farewell/production").at(-1)?.status, 200);
    await admin.promote("farewell", byNumber(3));
    c.clearCache();
    assert.equal((await c.getPromptVersion("farewell")).version, 3);
  });

  test("cacheTtl 0 asks every time", async () => {
    const c = client({ cacheTtl: 0 });
    const start = proxy.seen("/prompts/greeting/latest").length;
    await c.getPromptVersion("greeting", { label: "latest" });
    await c.getPromptVersion("greeting", { label: "latest" });
    assert.equal(proxy.seen("/prompts/greeting/latest").length, start + 2);
  });
});

describe("errors", () => {
  test("a missing prompt is NotFoundError; one without production NoProductionVersionError; both name it", async () => {
    const c = client();
    const missing = await c.getPromptVersion("nope", { label: "latest" }).catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError && !(missing instanceof NoProductionVersionError));
    assert.equal(missing.status, 404);
    assert.equal(missing.code, "not_found");
    assert.match(missing.message, /nope/);
    assert.match(missing.requestId ?? "", UUID);
    // Production of a prompt that does not exist: not found, not "no production version".
    const gone = await c.getPromptVersion("nope").catch((e: unknown) => e);
    assert.ok(gone instanceof NotFoundError && !(gone instanceof NoProductionVersionError));
    const unreleased = await c.getPromptVersion("unreleased").catch((e: unknown) => e);
    assert.ok(unreleased instanceof NoProductionVersionError);
    assert.match(unreleased.message, /unreleased/);
    await assert.rejects(c.getPromptVersion("greeting", { version: "v_doesnotexist" }), NotFoundError);
  });

  test("a wrong secret is an AuthenticationError from the token exchange", async () => {
    const c = client({ keySecret: "wrong-secret-0123456789" });
    const failure = await c.getPromptVersion("greeting").catch((e: unknown) => e);
    assert.ok(failure instanceof AuthenticationError);
    assert.equal(failure.status, 401);
    assert.equal(failure.code, "unauthorized");
    assert.match(failure.requestId ?? "", UUID);
  });

  test("a wrong client secret at the realm is an AuthenticationError with the RFC 6749 code", async () => {
    const c = PromptClient.withClientCredentials({
      baseUrl: server.baseUrl,
      authUrl: server.baseUrl,
      org: ORG,
      clientId: KEYS.read.clientId,
      clientSecret: "wrong-secret-0123456789",
    });
    const failure = await c.getPromptVersion("greeting").catch((e: unknown) => e);
    assert.ok(failure instanceof AuthenticationError);
    assert.equal(failure.code, "invalid_client");
  });

  test("an environment the service does not know is a NotFoundError", async () => {
    const failure = await client().getPromptVersion("greeting", { label: "staging" }).catch((e: unknown) => e);
    assert.ok(failure instanceof PromptServiceError);
    assert.equal(failure.status, 404);
    assert.ok(failure instanceof NotFoundError);
  });
});
