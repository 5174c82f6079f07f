/**
 * Variable contracts, rollouts and environments against a real `promptsvc serve`.
 *
 * The variable contract and rollout tests need a server with both. The environments
 * test first asks the server whether it has them and skips, saying so, when it does
 * not: the SDK's side is covered by the unit tests.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { assign, PromptClient, TemplateError } from "../../src/index.js";
import { Warnings } from "../support/fake-service.js";
import { Admin, KEYS, ORG, PromptService } from "../support/server.js";

let server: PromptService;
let admin: Admin;
let client: PromptClient;

before(async () => {
  server = await PromptService.start();
  admin = new Admin(server.baseUrl);
  client = new PromptClient({
    baseUrl: server.baseUrl,
    accountId: ORG,
    keyId: KEYS.read.clientId,
    keySecret: KEYS.read.secret,
    cacheTtl: 0,
    logger: new Warnings(),
  });
});

after(async () => {
  await client?.close();
  await server?.stop();
});

test("conditional sections: the implied boolean reaches render(), each branch renders", async () => {
  await admin.ok("POST", "/prompts", { name: "letter" });
  const content = "Hi {{name}}.\n{{#formal}}\nYours faithfully.\n{{/formal}}\n{{^formal}}\nCheers!\n{{/formal}}";
  const broken = await admin.call("POST", "/prompts/letter/versions", { content: "Hi\n  {{#formal}}" });
  assert.equal(broken.status, 400);
  assert.match(String(broken.body["message"]), /section \{\{#formal\}\} at line 2, column 3 is never closed/);
  const created = await admin.call("POST", "/prompts/letter/versions", { content });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  await admin.promote("letter", created.body["version_id"] as string);
  const v = await client.getPromptVersion("letter");
  assert.deepEqual(v.variables, ["name", "formal"]);
  assert.deepEqual(v.variables_schema["formal"], { type: "boolean", required: false, default: false });
  assert.equal(v.render({ name: "Ada", formal: true }), "Hi Ada.\nYours faithfully.\n");
  assert.equal(v.render({ name: "Ada", formal: false }), "Hi Ada.\nCheers!\n");
  assert.equal(v.render({ name: "Ada" }), "Hi Ada.\nCheers!\n");
  assert.throws(
    () => v.render({ name: "Ada", formal: "true" }),
    (e: unknown) => e instanceof TemplateError && e.problems[0]?.problem === 'expected boolean, got string "true"',
  );
});

test("variable contract: the declared schema and examples reach render()", async () => {
  await admin.ok("POST", "/prompts", { name: "order" });
  const schema = {
    item: { type: "string" },
    count: { type: "integer", default: 1 },
    tone: { type: "string", enum: ["kind", "terse"], required: false },
  };
  const created = await admin.call("POST", "/prompts/order/versions", {
    content: "{{count}} x {{item}} {{tone}}",
    variables_schema: schema,
    examples: [{ name: "one", variables: { item: "tea" } }],
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.deepEqual(created.body["variables_schema"], schema);
  await admin.promote("order", created.body["version_id"] as string);
  const v = await client.getPromptVersion("order");
  assert.deepEqual(v.variables_schema, schema);
  assert.deepEqual(v.examples, [{ name: "one", variables: { item: "tea" } }]);
  assert.equal(v.render({ item: "tea" }), "1 x tea ");
  assert.throws(
    () => v.render({ count: "3", tone: "rude" }),
    (e: unknown) => e instanceof TemplateError && e.problems.map((p) => p.variable).join() === "count,item,tone",
  );

  // The service refuses a version that breaks this one's callers unless acknowledged.
  const stricter = await admin.call("POST", "/prompts/order/versions", {
    content: "{{count}} x {{item}} {{tone}}",
    variables_schema: { ...schema, tone: { type: "string", enum: ["kind"], required: false } },
  });
  assert.equal(stricter.status, 201, JSON.stringify(stricter.body));
  const refused = await admin.call("POST", `/prompts/order/versions/${stricter.body["version_id"] as string}/promote`, {});
  assert.equal(refused.status, 409);
  assert.equal(refused.body["code"], "breaking_change");
  assert.deepEqual(
    (refused.body["changes"] as Array<Record<string, string>>).map((c) => [c.variable, c.change]),
    [["tone", "enum_narrowed"]],
  );
  const acknowledged = await admin.call("POST", `/prompts/order/versions/${stricter.body["version_id"] as string}/promote`, {
    allow_breaking: true,
    notes: "only kind replies from now on",
  });
  assert.equal(acknowledged.status, 200, JSON.stringify(acknowledged.body));
  assert.equal((acknowledged.body["promotion"] as Record<string, unknown>)["breaking"], true);
  const now = await client.getPromptVersion("order", { version: 2 });
  assert.deepEqual(now.variables_schema["tone"], { type: "string", enum: ["kind"], required: false });
  assert.throws(() => now.render({ item: "tea", tone: "terse" }), /"terse" is not one of "kind"/);
});

test("rollout: each key gets the side the server gives it, from one cached read", async () => {
  const versions = await admin.prompt("banner", ["old {{x}}", "new {{x}}"]);
  const candidate = versions[1]?.["version_id"] as string;
  const started = await admin.call("POST", `/prompts/banner/versions/${candidate}/promote`, { rollout_percent: 40 });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  const rolloutId = started.body["rollout_id"];
  assert.ok(typeof rolloutId === "string", "the answer is a Rollout");
  const cached = new PromptClient({ baseUrl: server.baseUrl, accountId: ORG, keyId: KEYS.read.clientId, keySecret: KEYS.read.secret });
  const keys = Array.from({ length: 50 }, (_, i) => `user-${i}`);
  for (const key of keys) {
    const got = await cached.getPromptVersion("banner", { rolloutKey: key });
    assert.equal(got.version, (await assign(rolloutId, key, 40)) ? 2 : 1, key);
    assert.equal(got.rollout?.rollout_id, rolloutId);
    const picked = await admin.ok("GET", `/prompts/banner/production?rollout_key=${encodeURIComponent(key)}`);
    assert.equal(picked["version"], got.version, `the server assigns ${key} alike`);
  }
});

test("environments: a label other than production and latest reads that environment", async (t) => {
  const made = await admin.call("POST", "/environments", { name: "staging" });
  if (made.status !== 201) {
    t.skip(`the server has no environments yet (POST /environments answered ${made.status})`);
    return;
  }
  const versions = await admin.prompt("env-prompt", ["prod {{x}}", "staging {{x}}"]);
  await admin.promote("env-prompt", versions[1]?.["version_id"] as string, { environment: "staging" });
  assert.equal((await client.getPromptVersion("env-prompt", { label: "staging" })).version, 2);
  assert.equal((await client.getPromptVersion("env-prompt")).version, 1);
});

test("model config: the served version's config reaches toOpenAI(); breaking tools are 409 by field", async () => {
  await admin.ok("POST", "/prompts", { name: "helper" });
  const config = {
    model: "gpt-4o-mini",
    params: { temperature: 0.2, max_tokens: 300 },
    tools: [{ name: "search", description: "Search", parameters: { type: "object", properties: { q: { type: "string" } } } }],
    response_format: { type: "json_object" },
  };
  const created = await admin.call("POST", "/prompts/helper/versions", { content: "Answer {{question}}", config });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  await admin.promote("helper", created.body["version_id"] as string);
  const v = await client.getPromptVersion("helper");
  assert.deepEqual(v.config, config);
  assert.deepEqual(v.toOpenAI({ question: "why?" }), {
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "Answer why?" }],
    temperature: 0.2,
    max_tokens: 300,
    tools: [{ type: "function", function: config.tools[0] }],
    response_format: { type: "json_object" },
  });

  const bad = await admin.call("POST", "/prompts/helper/versions", { content: "x", config: { params: { temperature: 3 } } });
  assert.equal(bad.status, 400);
  assert.ok("config.params.temperature" in (bad.body["errors"] as Record<string, unknown>));

  const toolless = await admin.call("POST", "/prompts/helper/versions", { content: "Answer {{question}}", config: { ...config, tools: [] } });
  assert.equal(toolless.status, 201, JSON.stringify(toolless.body));
  const refused = await admin.call("POST", `/prompts/helper/versions/${toolless.body["version_id"] as string}/promote`, {});
  assert.equal(refused.status, 409);
  assert.deepEqual(
    (refused.body["changes"] as Array<Record<string, string>>).map((c) => [c["field"], c["change"]]),
    [["config.tools.search", "removed"]],
  );
});
