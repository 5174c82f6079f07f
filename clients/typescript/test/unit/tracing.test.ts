/** OpenTelemetry attributes of render() and toOpenAI(), read back through OpenTelemetry's
 * own SDK and in-memory exporter; and the client where `@opentelemetry/api` cannot be
 * resolved, in a child process whose module hooks refuse it and log every load. */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

import { PromptClient } from "../../src/index.js";
import { FakeClock, FakeService, versionBody } from "../support/fake-service.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
const tracer = provider.getTracer("tests");
after(async () => {
  await provider.shutdown();
  context.disable();
});

function client(service: FakeService, options: { reportUsage?: boolean } = {}): PromptClient {
  return new PromptClient({ baseUrl: "http://svc.test", accountId: "acme", keyId: "k", keySecret: "s", fetch: service.fetch, clock: new FakeClock().read, ...options });
}

function inSpan(name: string, work: () => void): void {
  tracer.startActiveSpan(name, (span) => {
    work();
    span.end();
  });
}

const attributesOf = () => exporter.getFinishedSpans().map((span) => ({ ...span.attributes }));

describe("span attributes", () => {
  test("a render sets the prompt's attributes on the active span; latest has no environment", async () => {
    exporter.reset();
    const service = new FakeService();
    service.bodies.set("greeting/latest", versionBody({ version: 2, version_id: "v_2" }));
    const reader = client(service, { reportUsage: false }); // tracing does not need usage reporting
    const production = await reader.getPromptVersion("greeting");
    const latest = await reader.getPromptVersion("greeting", { label: "latest" });
    inSpan("call the model", () => production.render({ name: "Ada" }));
    inSpan("call the model", () => latest.toOpenAI({ name: "Ada" }));
    production.render({ name: "no span" }); // no active span: nothing to set
    assert.deepEqual(attributesOf(), [
      {
        "gen_ai.prompt.name": "greeting",
        "gen_ai.prompt.version": "1",
        "promptsvc.prompt.version_id": "v_1",
        "promptsvc.environment": "production",
      },
      { "gen_ai.prompt.name": "greeting", "gen_ai.prompt.version": "2", "promptsvc.prompt.version_id": "v_2" },
    ]);
    await reader.close();
  });

  test("during a rollout: its id and the arm", async () => {
    exporter.reset();
    const service = new FakeService();
    const candidate = versionBody({ version: 2, version_id: "v_2", is_production: false });
    service.bodies.set("greeting/production", versionBody({ rollout: { rollout_id: "ro_1", percent: 50, candidate } }));
    const reader = client(service);
    const baseline = await reader.getPromptVersion("greeting");
    inSpan("baseline", () => baseline.render({ name: "a" }));
    inSpan("candidate", () => baseline.rollout?.candidate.render({ name: "b" }));
    const [first, second] = attributesOf();
    assert.equal(first?.["promptsvc.rollout.id"], "ro_1");
    assert.equal(first?.["promptsvc.rollout.arm"], "baseline");
    assert.equal(second?.["promptsvc.rollout.arm"], "candidate");
    assert.equal(second?.["gen_ai.prompt.version"], "2");
    await reader.close();
  });
});

// Module hooks for the child: refuse (or allow) @opentelemetry/*, and log each such load.
const HOOKS = `
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@opentelemetry/") && process.env.BLOCK_OTEL === "1") {
    appendFileSync(process.env.OTEL_LOG, "refused " + specifier + "\\n");
    throw Object.assign(new Error("Cannot find package '" + specifier + "'"), { code: "ERR_MODULE_NOT_FOUND" });
  }
  return next(specifier, context);
}
export async function load(url, context, next) {
  if (url.includes("/@opentelemetry/")) appendFileSync(process.env.OTEL_LOG, "loaded " + url + "\\n");
  return next(url, context);
}
`;

const CHILD = (build: string) => `
import { register } from "node:module";
register(${JSON.stringify(new URL("hooks.mjs", `file://${build}/`).href)});
const { PromptClient } = await import(${JSON.stringify(`file://${build}/src/index.js`)});
const { FakeService } = await import(${JSON.stringify(`file://${build}/test/support/fake-service.js`)});
const service = new FakeService();
const client = new PromptClient({ baseUrl: "http://svc.test", accountId: "acme", keyId: "k", keySecret: "s", fetch: service.fetch });
const version = await client.getPromptVersion("greeting");
console.log(version.render({ name: "Ada" }));
await client.close();
`;

describe("without @opentelemetry/api", () => {
  const build = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");
  const dir = mkdtempSync(join(tmpdir(), "promptsvc-otel-"));
  writeFileSync(join(build, "hooks.mjs"), HOOKS);

  for (const blocked of [true, false]) {
    test(blocked ? "renders, and nothing of it is loaded" : "(installed: it is loaded, so the check can see it)", () => {
      const log = join(dir, `${blocked}.log`);
      writeFileSync(log, "");
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", CHILD(build)], {
        env: { ...process.env, BLOCK_OTEL: blocked ? "1" : "0", OTEL_LOG: log },
        encoding: "utf-8",
      });
      assert.equal(child.status, 0, child.stderr);
      assert.equal(child.stdout, "Hello Ada!\n");
      const lines = readFileSync(log, "utf-8").split("\n").filter(Boolean);
      if (blocked) {
        assert.deepEqual(lines, ["refused @opentelemetry/api"]);
      } else {
        assert.ok(lines.some((line) => line.startsWith("loaded ") && line.includes("/@opentelemetry/api/")), lines.join("\n"));
      }
    });
  }
});
