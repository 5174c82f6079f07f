/**
 * Usage counting against a real `promptsvc serve` (through the recording proxy): counts
 * and outcomes arrive (read back with `GET /api/v1/prompts/{name}/usage`), nothing is
 * sent with `reportUsage: false`, the background send and the one at close, counts kept
 * across a send the gateway failed, and a rollout's arms apart.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { PromptClient, type PromptClientOptions, ServerError } from "../../src/index.js";
import { eventually, Warnings } from "../support/fake-service.js";
import { Proxy } from "../support/proxy.js";
import { Admin, KEYS, ORG, PromptService } from "../support/server.js";

let server: PromptService;
let proxy: Proxy;
let admin: Admin;
const clients: PromptClient[] = [];

function client(options: Partial<PromptClientOptions> = {}): PromptClient {
  const made = new PromptClient({
    baseUrl: proxy.baseUrl,
    accountId: ORG,
    keyId: KEYS.read.clientId,
    keySecret: KEYS.read.secret,
    logger: new Warnings(),
    usageInterval: 3600, // sent by flushUsage() and close() unless a test says otherwise
    ...options,
  });
  clients.push(made);
  return made;
}

type Figures = { renders: number; ok: number; errors: number; score_avg: number | null };

/** The prompt's usage summed over buckets, by "version environment rollout_id arm". */
async function usage(name: string): Promise<Record<string, Figures>> {
  const body = await admin.ok("GET", `/prompts/${name}/usage`);
  const summed: Record<string, Figures> = {};
  for (const item of body["items"] as Array<Record<string, unknown>>) {
    const key = [item["version"], item["environment"], item["rollout_id"], item["arm"]].join(" ");
    const into = (summed[key] ??= { renders: 0, ok: 0, errors: 0, score_avg: null });
    into.renders += item["renders"] as number;
    into.ok += item["ok"] as number;
    into.errors += item["errors"] as number;
    into.score_avg = item["score_avg"] as number | null;
  }
  return summed;
}

const figures = (f: Partial<Figures>): Figures => ({ renders: 0, ok: 0, errors: 0, score_avg: null, ...f });

before(async () => {
  server = await PromptService.start();
  proxy = await Proxy.start(server.baseUrl);
  admin = new Admin(server.baseUrl);
  for (const name of ["counted", "quiet", "background", "failing"]) await admin.prompt(name, ["Hello {{name}}!", "Hi {{name}}."]);
});

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await proxy?.stop();
  await server?.stop();
});

describe("usage", () => {
  test("renders and outcomes arrive at close", async () => {
    const c = client();
    const production = await c.getPromptVersion("counted");
    const latest = await c.getPromptVersion("counted", { label: "latest" });
    for (let i = 0; i < 3; i++) production.render({ name: "Ada" });
    latest.toOpenAI({ name: "Ada" });
    c.recordOutcome(production, { score: 0.5 });
    c.recordOutcome(production, { ok: true, score: 1 });
    c.recordOutcome(production, { ok: false });
    assert.equal(proxy.seen("/api/v1/usage").length, 0); // nothing before the interval or close()
    await c.close();
    assert.deepEqual(
      proxy.seen("/api/v1/usage").map((e) => e.status),
      [202],
    );
    assert.deepEqual(await usage("counted"), {
      "1 production  ": figures({ renders: 3, ok: 2, errors: 1, score_avg: 0.75 }),
      "2   ": figures({ renders: 1 }),
    });
  });

  test("reportUsage: false sends nothing", async () => {
    const c = client({ reportUsage: false, usageInterval: 0.05 });
    const version = await c.getPromptVersion("quiet");
    version.render({ name: "Ada" });
    c.recordOutcome(version, { ok: false });
    await c.flushUsage();
    await c.close();
    assert.deepEqual(await usage("quiet"), {});
  });

  test("counts are sent in the background every usageInterval seconds", async () => {
    const c = client({ usageInterval: 0.05 });
    const version = await c.getPromptVersion("background");
    version.render({ name: "Ada" });
    await eventually(async () => Object.keys(await usage("background")).length === 1);
    version.render({ name: "Ada" });
    await c.close();
    assert.deepEqual(await usage("background"), { "1 production  ": figures({ renders: 2 }) });
  });

  test("a send the gateway failed is kept for the next", async () => {
    const c = client();
    const version = await c.getPromptVersion("failing");
    version.render({ name: "Ada" });
    c.recordOutcome(version, { ok: false });
    proxy.mode = "gateway-error";
    try {
      await assert.rejects(c.flushUsage(), ServerError);
    } finally {
      proxy.mode = "pass";
    }
    assert.deepEqual(await usage("failing"), {});
    version.render({ name: "Ada" });
    await c.close();
    assert.deepEqual(await usage("failing"), { "1 production  ": figures({ renders: 2, errors: 1 }) });
  });

  test("a rollout's arms arrive apart", async () => {
    const [, v2] = await admin.prompt("rolled", ["Hello {{name}}!", "Hi {{name}}."]);
    const rollout = await admin.promote("rolled", v2?.["version_id"] as string, { rollout_percent: 50 });
    const id = rollout["rollout_id"] as string;
    const c = client();
    let baseline = 0;
    let candidate = 0;
    for (let n = 0; n < 200; n++) {
      const version = await c.getPromptVersion("rolled", { rolloutKey: `user-${n}` });
      version.render({ name: "Ada" });
      c.recordOutcome(version, { ok: version.version === 1 });
      if (version.version === 1) baseline += 1;
      else candidate += 1;
    }
    await c.close();
    assert.deepEqual(await usage("rolled"), {
      [`1 production ${id} baseline`]: figures({ renders: baseline, ok: baseline }),
      [`2 production ${id} candidate`]: figures({ renders: candidate, errors: candidate }),
    });
  });
});
