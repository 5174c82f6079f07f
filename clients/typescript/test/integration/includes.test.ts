/**
 * Composed prompts (docs/composition.md) against a real `promptsvc serve`: a version
 * answers its resolved `content`, its `source_content` and `includes`, and renders the
 * resolved text; a watching client drops an entry when a prompt it includes changes,
 * without asking the service about the others.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { PromptClient } from "../../src/index.js";
import { eventually, Warnings } from "../support/fake-service.js";
import { Proxy } from "../support/proxy.js";
import { Admin, KEYS, ORG, PromptService } from "../support/server.js";

let server: PromptService;
let proxy: Proxy;
let admin: Admin;
let client: PromptClient;
let safety: Array<Record<string, unknown>>;

before(async () => {
  server = await PromptService.start();
  proxy = await Proxy.start(server.baseUrl);
  admin = new Admin(server.baseUrl);
  safety = await admin.prompt("safety", ["Be safe, {{who}}.", "Be careful, {{who}}."]);
  await admin.prompt("page", ["{{> safety}} Hi {{name}}."]);
  await admin.prompt("other", ["other {{x}}"]);
  client = new PromptClient({
    baseUrl: proxy.baseUrl,
    accountId: ORG,
    keyId: KEYS.read.clientId,
    keySecret: KEYS.read.secret,
    watch: true,
    logger: new Warnings(),
  });
  await eventually(() => client.watching, 30);
});

after(async () => {
  await client?.close();
  await proxy?.stop();
  await server?.stop();
});

test("a version with includes answers its source and includes, and renders resolved", async () => {
  const page = await client.getPromptVersion("page");
  assert.equal(page.content, "Be safe, {{who}}. Hi {{name}}.");
  assert.equal(page.source_content, "{{> safety}} Hi {{name}}.");
  assert.deepEqual(page.includes, [{ name: "safety", ref: null, version: 1, version_id: safety[0]?.["version_id"] }]);
  assert.deepEqual([...page.included_prompts], ["safety"]);
  assert.deepEqual(page.variables, ["who", "name"]);
  assert.equal(page.render({ who: "Ada", name: "Bob" }), "Be safe, Ada. Hi Bob.");
  const plain = await client.getPromptVersion("other");
  assert.equal(plain.source_content, plain.content);
  assert.deepEqual(plain.includes, []);
});

test("a change of an included prompt drops the entries that splice it in, and only those", async () => {
  await client.getPromptVersion("page");
  await client.getPromptVersion("other");
  const otherReads = proxy.seen("/prompts/other/").length;
  const pageReads = proxy.seen("/prompts/page/").length;
  assert.equal((await client.getPromptVersion("page")).version, 1, "served from the cache");
  assert.equal(proxy.seen("/prompts/page/").length, pageReads);
  await admin.promote("safety", safety[1]?.["version_id"] as string);
  await eventually(async () => (await client.getPromptVersion("page")).content.startsWith("Be careful"), 30);
  assert.ok(proxy.seen("/prompts/page/").length > pageReads, "page was asked again");
  await client.getPromptVersion("other");
  assert.equal(proxy.seen("/prompts/other/").length, otherReads, "an event for safety left 'other' cached");
});
