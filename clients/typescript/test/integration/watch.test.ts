/**
 * watch: true against a real `promptsvc serve` with 3-second tokens: a promotion is
 * served without waiting for the cache's TTL (300 s: every deadline here sits far below
 * it, and far above what the event takes), a cut stream resumes with Last-Event-ID and
 * gets what it missed, and a stream that ends at its token's expiry comes back with a
 * fresh token. How fast a promotion arrives is a benchmark's figure, not asserted here.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { PromptClient } from "../../src/index.js";
import { eventually, Warnings } from "../support/fake-service.js";
import { Proxy } from "../support/proxy.js";
import { Admin, KEYS, ORG, PromptService } from "../support/server.js";

const LIFETIME = 3;

let server: PromptService;
let proxy: Proxy;
let admin: Admin;
let client: PromptClient;

const streams = () => proxy.seen("/api/v1/events").filter((e) => e.headers["accept"] === "text/event-stream");

async function versionIds(name: string): Promise<Map<number, string>> {
  const page = (await admin.ok("GET", `/prompts/${name}/versions`)) as { items: Array<{ version: number; version_id: string }> };
  return new Map(page.items.map((v) => [v.version, v.version_id]));
}

before(async () => {
  server = await PromptService.start({ tokenLifetime: LIFETIME });
  proxy = await Proxy.start(server.baseUrl);
  admin = new Admin(server.baseUrl);
  await admin.prompt("greeting", ["v1 {{name}}", "v2 {{name}}", "v3 {{name}}", "v4 {{name}}"]);
  await admin.prompt("other", ["other {{x}}"]);
  client = new PromptClient({
    baseUrl: proxy.baseUrl,
    accountId: ORG,
    keyId: KEYS.read.clientId,
    keySecret: KEYS.read.secret,
    watch: true,
    tokenRefreshBuffer: 1,
    logger: new Warnings(),
  });
  await eventually(() => client.watching, 30);
});

after(async () => {
  await client?.close();
  await proxy?.stop();
  await server?.stop();
});

test("the watcher positions once, then streams with the SDK's headers", () => {
  const [position] = proxy.seen("/api/v1/events?wait=0");
  assert.equal(position?.status, 200);
  const [first] = streams();
  assert.equal(first?.status, 200);
  assert.equal(first?.headers["cache-control"], "no-store");
  assert.match(String(first?.headers["last-event-id"]), /^\d+-\d+$/);
  assert.match(String(first?.headers["user-agent"]), /^promptsvc-typescript\//);
});

test("a promotion is served without waiting for the TTL; other prompts keep their entry", async () => {
  const ids = await versionIds("greeting");
  assert.equal((await client.getPromptVersion("greeting")).version, 1);
  await client.getPromptVersion("other");
  const otherReads = proxy.seen("/prompts/other/").length;
  await admin.promote("greeting", ids.get(2) as string);
  await eventually(async () => (await client.getPromptVersion("greeting")).version === 2, 30);
  await client.getPromptVersion("other");
  assert.equal(proxy.seen("/prompts/other/").length, otherReads, "an event for greeting left 'other' cached");
});

test("a cut stream resumes with Last-Event-ID and replays the change made meanwhile", async () => {
  const ids = await versionIds("greeting");
  // Version 2 is served, so the client has seen the event of its promotion: the newest.
  await eventually(async () => (await client.getPromptVersion("greeting")).version === 2, 30);
  await eventually(() => client.watching, 30);
  const { last_id: lastSeen } = await admin.ok("GET", "/events?wait=0");
  const before = streams().length;
  assert.ok(proxy.cutStreams() >= 1);
  proxy.mode = "refuse"; // the change happens while the client cannot reconnect
  try {
    await admin.promote("greeting", ids.get(3) as string);
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    proxy.mode = "pass";
  }
  await eventually(() => streams().length > before, 30);
  // After the last event it saw, not after the one the cut stream started from (a
  // 3-second token may have renewed that stream since) nor after the newest one.
  const resumed = streams()[before];
  assert.equal(resumed?.headers["last-event-id"], lastSeen, "resumes after the last event it saw");
  await eventually(async () => (await client.getPromptVersion("greeting")).version === 3, 30);
});

test("the stream ends at its token's expiry and comes back with a fresh token, still following", async () => {
  const ids = await versionIds("greeting");
  const before = streams().length;
  const tokenBefore = streams().at(-1)?.headers["authorization"];
  await eventually(() => streams().length > before, LIFETIME + 30);
  await eventually(() => client.watching, 30);
  const after = streams().at(-1);
  assert.equal(after?.status, 200);
  assert.notEqual(after?.headers["authorization"], tokenBefore, "a fresh token");
  await client.getPromptVersion("greeting");
  await admin.promote("greeting", ids.get(4) as string);
  await eventually(async () => (await client.getPromptVersion("greeting")).version === 4, 30);
});

test("close() stops following", async () => {
  await client.close();
  assert.equal(client.watching, false);
  const count = streams().length;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(streams().length, count);
});
