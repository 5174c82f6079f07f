/**
 * preload, snapshotStore (and the Node file store), fallback functions and cacheInfo()
 * against a real `promptsvc serve` behind the recording proxy: a preload fills the
 * cache one request per page, a service down at start-up still lets the application
 * serve its last snapshot (marked stale) until it answers again, a snapshot cut in half
 * is ignored with a warning, and a watch started from a preload resumes after its
 * event_id.
 */

import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { STALE_RETRY } from "../../src/client.js";
import { PromptClient, type PromptClientOptions, ServerError, type SnapshotStore, TransportError } from "../../src/index.js";
import { FileSnapshotStore } from "../../src/node/index.js";
import { eventually, FakeClock, Warnings } from "../support/fake-service.js";
import { Proxy } from "../support/proxy.js";
import { Admin, KEYS, ORG, PromptService } from "../support/server.js";

let server: PromptService;
let proxy: Proxy;
let admin: Admin;
const dir = mkdtempSync(join(tmpdir(), "promptsvc-snapshot-"));
const made: PromptClient[] = [];

function client(options: Partial<PromptClientOptions> = {}): PromptClient {
  const c = new PromptClient({
    baseUrl: proxy.baseUrl,
    accountId: ORG,
    keyId: KEYS.read.clientId,
    keySecret: KEYS.read.secret,
    logger: new Warnings(),
    retryBackoff: 0.01,
    ...options,
  });
  made.push(c);
  return c;
}

/** A store in memory, as an application might keep one in a KV store. */
class MemoryStore implements SnapshotStore {
  text: string | null = null;
  saves = 0;
  load(): string | null {
    return this.text;
  }
  save(text: string): void {
    this.text = text;
    this.saves += 1;
  }
}

const pages = (env = "production") => proxy.seen(`/api/v1/environments/${env}/prompts`);
const singleReads = () => proxy.seen("/api/v1/prompts/");

before(async () => {
  server = await PromptService.start();
  proxy = await Proxy.start(server.baseUrl);
  admin = new Admin(server.baseUrl);
  await admin.prompt("alpha", ["Alpha {{name}}", "Alpha two"]);
  await admin.prompt("beta", ["Beta {{name}}"]);
  await admin.ok("POST", "/prompts", { name: "draft-only", prompt_type: "text" });
});

after(async () => {
  for (const c of made) await c.close();
  await proxy?.stop();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("preload: later reads are cache hits, with no request", async () => {
  const before = pages().length;
  const reads = singleReads().length;
  const c = client({ preload: true });
  await c.ready();
  assert.equal(pages().length, before + 1);
  assert.equal((await c.getPromptVersion("alpha")).version, 1);
  assert.equal((await c.getPromptVersion("beta")).content, "Beta {{name}}");
  assert.equal(singleReads().length, reads);
  assert.deepEqual(c.cacheInfo(), { hits: 2, misses: 0, stale_served: 0, fallbacks: 0, entries: 2 });
});

test("preload of some names keeps only those", async () => {
  const c = client({ preload: ["beta"] });
  await c.ready();
  const reads = singleReads().length;
  await c.getPromptVersion("beta");
  assert.equal(singleReads().length, reads);
  await c.getPromptVersion("alpha");
  assert.equal(singleReads().length, reads + 1);
  const info = c.cacheInfo();
  assert.deepEqual([info.hits, info.misses, info.entries], [1, 1, 2]);
});

test("a service down at start-up: the snapshot is served, stale, until it answers", async () => {
  const store = new MemoryStore();
  const first = client({ preload: true, snapshotStore: store });
  await first.ready();
  await eventually(() => store.saves > 0);
  const saved = JSON.parse(store.text ?? "{}") as { entries: Record<string, unknown>; event_id: string };
  assert.deepEqual(Object.keys(saved.entries).sort(), ["prompt:alpha:production", "prompt:beta:production"]);

  const clock = new FakeClock();
  proxy.mode = "gateway-error";
  let c: PromptClient;
  try {
    c = client({ preload: true, snapshotStore: store, maxRetries: 0, clock: clock.read });
    await c.ready();
    const served = await c.getPromptVersion("alpha");
    assert.equal(served.is_stale, true);
    assert.equal(served.render({ name: "Ada" }), "Alpha Ada");
    assert.equal(c.cacheInfo().stale_served, 1);
  } finally {
    proxy.mode = "pass";
  }
  clock.advance(STALE_RETRY + 1);
  const fresh = await c.getPromptVersion("alpha");
  assert.equal(fresh.is_stale, false);
  assert.equal(fresh.version, 1);
});

test("without a snapshot a failed preload rejects ready()", async () => {
  proxy.mode = "gateway-error";
  try {
    const c = client({ preload: true, snapshotStore: new MemoryStore(), maxRetries: 0 });
    await assert.rejects(c.ready(), ServerError);
  } finally {
    proxy.mode = "pass";
  }
});

test("a snapshot cut in half is ignored with a warning, never thrown", async () => {
  const store = new MemoryStore();
  const first = client({ preload: true, snapshotStore: store });
  await first.ready();
  await eventually(() => store.saves > 0);
  const whole = store.text ?? "";
  store.text = whole.slice(0, whole.length / 2);
  const warnings = new Warnings();
  const c = client({ preload: true, snapshotStore: store, logger: warnings });
  await c.ready();
  assert.match(warnings.messages.join("\n"), /ignoring the snapshot/);
  assert.equal((await c.getPromptVersion("alpha")).is_stale, false);
  await eventually(() => (store.text ?? "").length === whole.length);
});

test("FileSnapshotStore: one file, replaced atomically, read back by the next client", async () => {
  const path = join(dir, "prompts.json");
  const store = new FileSnapshotStore(path);
  assert.equal(await store.load(), null);
  const c = client({ snapshotStore: store });
  await c.getPromptVersion("alpha", { label: "latest" });
  await eventually(() => readdirSync(dir).includes("prompts.json"));
  assert.deepEqual(readdirSync(dir), ["prompts.json"]); // no temporary file left behind
  const saved = JSON.parse(readFileSync(path, "utf-8")) as { entries: Record<string, { version: { version: number } }> };
  assert.equal(saved.entries["prompt:alpha:latest"]?.version.version, 2);
  proxy.mode = "refuse";
  try {
    const offline = client({ snapshotStore: new FileSnapshotStore(path), maxRetries: 0 });
    await offline.ready();
    const served = await offline.getPromptVersion("alpha", { label: "latest" });
    assert.equal(served.is_stale, true);
    assert.equal(served.version, 2);
  } finally {
    proxy.mode = "pass";
  }
});

test("fallback as a function of the name, called only when served", async () => {
  const asked: string[] = [];
  const fallback = (name: string): string => {
    asked.push(name);
    return `Hello from the ${name} fallback`;
  };
  const c = client({ maxRetries: 0 });
  assert.equal((await c.getPromptVersion("alpha", { fallback })).is_fallback, false);
  assert.deepEqual(asked, []);
  proxy.mode = "refuse";
  try {
    const spare = await c.getPromptVersion("beta", { fallback });
    assert.equal(spare.is_fallback, true);
    assert.equal(spare.content, "Hello from the beta fallback");
    assert.deepEqual(asked, ["beta"]);
    assert.equal(c.cacheInfo().fallbacks, 1);
    await assert.rejects(c.getPromptVersion("beta"), TransportError);
  } finally {
    proxy.mode = "pass";
  }
});

test("a watch started from a preload resumes after its event_id", async () => {
  const c = client({ preload: true, watch: true });
  await c.ready();
  const page = pages().at(-1);
  assert.ok(page !== undefined);
  await eventually(() => c.watching, 30);
  const stream = proxy.seen("/api/v1/events").filter((e) => e.headers["last-event-id"] !== undefined).at(-1);
  const positions = proxy.seen("/api/v1/events?wait=0").length;
  assert.ok(stream !== undefined);
  assert.equal(positions, 0, "no position lookup: the preload's event_id is the starting point");
  const versions = await admin.ok("GET", "/prompts/alpha/versions?limit=1");
  const newest = (versions["items"] as Array<{ version_id: string }>)[0]?.version_id ?? "";
  const events = await admin.ok("GET", "/events?after=0-0&wait=0");
  assert.ok(typeof stream.headers["last-event-id"] === "string" && stream.headers["last-event-id"] <= String(events["last_id"]));
  await admin.promote("alpha", newest);
  await eventually(async () => (await c.getPromptVersion("alpha")).version === 2, 30);
});
