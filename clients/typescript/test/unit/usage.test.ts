/** Usage counting on a fake fetch: the keys, the sends' batches, what a failed send keeps,
 * the bound; what arrives at a real server is in test/integration/usage.test.ts. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { PromptClient, type PromptClientOptions, PromptVersion, ServerError, TransportError } from "../../src/index.js";
import { MAX_ITEMS, readEnvironment, UsageCounter, type UsageKey } from "../../src/usage.js";
import { error, eventually, FakeClock, FakeService, versionBody, Warnings } from "../support/fake-service.js";

function setup(options: Partial<PromptClientOptions> = {}) {
  const service = new FakeService();
  const warnings = new Warnings();
  const client = new PromptClient({
    baseUrl: "http://svc.test",
    accountId: "acme",
    keyId: "k",
    keySecret: "s",
    fetch: service.fetch,
    clock: new FakeClock().read,
    logger: warnings,
    retryBackoff: 0.001,
    usageInterval: 3600, // sent by flushUsage() and close() unless a test says otherwise
    ...options,
  });
  return { service, warnings, client };
}

const ROLLOUT = versionBody({
  rollout: { rollout_id: "ro_1", percent: 50, candidate: versionBody({ version: 2, version_id: "v_2", is_production: false }) },
});

function item(key: Partial<UsageKey>, counts: Record<string, number> = {}): Record<string, unknown> {
  return {
    prompt_id: "pmt_1",
    version: 1,
    environment: "production",
    rollout_id: null,
    arm: null,
    renders: 0,
    ok: 0,
    errors: 0,
    score_sum: 0,
    score_count: 0,
    ...key,
    ...counts,
  };
}

describe("counting", () => {
  test("each render and toOpenAI adds one render to the version's key; a failed render none", async () => {
    const { service, client } = setup();
    service.bodies.set("greeting/latest", versionBody());
    const production = await client.getPromptVersion("greeting");
    production.render({ name: "a" });
    production.toOpenAI({ name: "a" });
    assert.throws(() => production.render({}));
    (await client.getPromptVersion("greeting", { label: "latest" })).render({ name: "b" });
    await client.flushUsage();
    assert.deepEqual(service.usage, [item({}, { renders: 2 }), item({ environment: null }, { renders: 1 })]);
  });

  test("during a rollout the baseline and the candidate count under their arms", async () => {
    const { service, client } = setup();
    service.bodies.set("greeting/production", ROLLOUT);
    const baseline = await client.getPromptVersion("greeting");
    baseline.render({ name: "a" });
    baseline.rollout?.candidate.render({ name: "b" });
    baseline.rollout?.candidate.render({ name: "c" });
    await client.close();
    assert.deepEqual(service.usage, [
      item({ rollout_id: "ro_1", arm: "baseline" }, { renders: 1 }),
      item({ version: 2, rollout_id: "ro_1", arm: "candidate" }, { renders: 2 }),
    ]);
  });

  test("recordOutcome adds ok, errors and scores to the version's key", async () => {
    const { service, client } = setup();
    const version = await client.getPromptVersion("greeting");
    client.recordOutcome(version);
    client.recordOutcome(version, { ok: false });
    client.recordOutcome(version, { score: 0.25 });
    client.recordOutcome(version, { ok: true, score: 1 });
    assert.throws(() => client.recordOutcome(version, { score: 1.5 }), RangeError);
    client.recordOutcome(PromptVersion.fallback("greeting", "Hi {{name}}"), { ok: false }); // a fallback counts nothing
    await client.close();
    assert.deepEqual(service.usage, [item({}, { ok: 3, errors: 1, score_sum: 1.25, score_count: 2 })]);
  });

  test("reportUsage: false sends nothing, at close neither", async () => {
    const { service, client } = setup({ reportUsage: false, usageInterval: 0.01 });
    const version = await client.getPromptVersion("greeting");
    version.render({ name: "a" });
    client.recordOutcome(version);
    await new Promise((r) => setTimeout(r, 50));
    await client.flushUsage();
    await client.close();
    assert.deepEqual(service.requests("/api/v1/usage"), []);
  });

  test("nothing counted, nothing sent", async () => {
    const { service, client } = setup();
    await client.getPromptVersion("greeting");
    await client.close();
    assert.deepEqual(service.requests("/api/v1/usage"), []);
  });
});

describe("sending", () => {
  test("in the background every usageInterval seconds, and at close", async () => {
    const { service, client } = setup({ usageInterval: 0.05 });
    const version = await client.getPromptVersion("greeting");
    version.render({ name: "a" });
    await eventually(() => service.usage.length === 1);
    version.render({ name: "b" });
    await client.close();
    assert.deepEqual(service.usage, [item({}, { renders: 1 }), item({}, { renders: 1 })]);
  });

  test("at most 500 items a request", async () => {
    const { service, client } = setup({ preload: true });
    const page = (from: number, to: number, cursor: string | null) => () =>
      Response.json({
        environment: "production",
        event_id: "1-0",
        items: Array.from({ length: to - from }, (_, i) =>
          versionBody({ name: `p${from + i}`, prompt_id: `pmt_${from + i}`, version_id: `v_${from + i}` }),
        ),
        next_cursor: cursor,
      });
    service.script("/environments/production/prompts", page(0, 1000, "c1"));
    service.script("/environments/production/prompts", page(1000, 1201, null));
    await client.ready();
    for (let n = 0; n < 1201; n++) (await client.getPromptVersion(`p${n}`)).render({ name: "a" });
    await client.flushUsage();
    const posts = service.requests("/api/v1/usage").map((s) => (JSON.parse(s.body) as { items: unknown[] }).items.length);
    assert.deepEqual(posts, [MAX_ITEMS, MAX_ITEMS, 201]);
    assert.equal(service.usage.length, 1201);
  });

  test("a failed send keeps the counts for the next, never retried itself", async () => {
    const { service, client, warnings } = setup();
    const version = await client.getPromptVersion("greeting");
    version.render({ name: "a" });
    client.recordOutcome(version, { ok: false });
    service.script("/api/v1/usage", () => error(503, "unavailable", "down"));
    await assert.rejects(client.flushUsage(), ServerError);
    assert.equal(service.requests("/api/v1/usage").length, 1); // a 5xx is not retried
    version.render({ name: "b" });
    service.script("/api/v1/usage", () => new TypeError("fetch failed"));
    await assert.rejects(client.flushUsage(), TransportError);
    version.render({ name: "c" });
    service.script("/api/v1/usage", () => error(429, "rate_limited", "slow down"));
    await assert.rejects(client.flushUsage());
    await client.close();
    assert.deepEqual(service.usage, [item({}, { renders: 3, errors: 1 })]);
    assert.deepEqual(warnings.messages, []);
  });

  test("a refusal other than 429 drops the batch with a warning", async () => {
    const { service, client, warnings } = setup();
    (await client.getPromptVersion("greeting")).render({ name: "a" });
    service.script("/api/v1/usage", () => error(400, "invalid", "bad items"));
    await client.flushUsage();
    await client.close();
    assert.deepEqual(service.usage, []);
    assert.match(warnings.messages.join("\n"), /dropping 1 items the service refused: bad items/);
  });
});

describe("the counter", () => {
  const key = (n: number): UsageKey => ({ prompt_id: `pmt_${n}`, version: 1, environment: null, rollout_id: null, arm: null });

  test("what is given back goes first and adds to newer counts of its key", () => {
    const counter = new UsageCounter();
    counter.record(key(0), true, null);
    const unsent = counter.take();
    counter.record(key(1), true, null);
    counter.record(key(0), false, null);
    counter.giveBack(unsent);
    const taken = [...counter.take().values()].map(({ key: k, tally }) => [k.prompt_id, tally.ok, tally.errors]);
    assert.deepEqual(taken, [
      ["pmt_0", 1, 1],
      ["pmt_1", 1, 0],
    ]);
  });

  test("beyond the bound the oldest keys go, with a warning", () => {
    const warned: string[] = [];
    const counter = new UsageCounter(3, (m) => warned.push(m));
    for (const n of [0, 1]) counter.record(key(n), true, null);
    counter.giveBack(counter.take());
    for (const n of [2, 3, 4]) counter.record(key(n), true, null);
    assert.deepEqual(
      [...counter.take().values()].map(({ key: k }) => k.prompt_id),
      ["pmt_2", "pmt_3", "pmt_4"],
    );
    assert.match(warned.join(), /dropping the 2 oldest/);
  });

  test("the environment read comes from the path", () => {
    assert.equal(readEnvironment("/api/v1/prompts/greeting/production"), "production");
    assert.equal(readEnvironment("/api/v1/prompts/greeting/environments/staging"), "staging");
    assert.equal(readEnvironment("/api/v1/prompts/greeting/latest"), null);
    assert.equal(readEnvironment("/api/v1/prompts/greeting/versions/v_1"), null);
  });
});

