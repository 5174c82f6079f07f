/** version.config (typed, frozen, as stored) and version.toOpenAI(), held to the vectors the Python SDK reads too. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { type ModelConfig, PromptVersion } from "../../src/index.js";
import { ModelError } from "../../src/prompt-version.js";
import { extractVariables } from "../../src/template.js";
import { versionBody } from "../support/fake-service.js";

// Read by the Python SDK's tests too (tests/client/test_sdk_model_config.py).
const VECTORS = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/model_config.json", import.meta.url), "utf-8")) as {
  cases: Array<{
    name: string;
    prompt_type: string;
    content: string;
    config: ModelConfig | null;
    values: Record<string, unknown>;
    arguments: Record<string, unknown>;
  }>;
};

function version(content: string, promptType: string, config: unknown): PromptVersion {
  return PromptVersion.fromJson(
    versionBody({ content, prompt_type: promptType, variables: extractVariables(content, promptType), config }),
  );
}

describe("shared toOpenAI vectors", () => {
  for (const c of VECTORS.cases) {
    test(c.name, () => {
      const v = version(c.content, c.prompt_type, c.config);
      assert.deepEqual(v.toOpenAI(c.values), c.arguments);
    });
  }
});

describe("version.config", () => {
  const config = VECTORS.cases[0]?.config as ModelConfig;

  test("is the object as stored, typed with the API's names, frozen", () => {
    const v = version("Hi", "text", config);
    assert.deepEqual(v.config, config);
    assert.equal(v.config?.params?.temperature, 0.2);
    assert.equal(v.config?.tools?.[0]?.name, "search");
    assert.equal(v.config?.response_format?.type, "json_schema");
    assert.ok(Object.isFrozen(v.config) && Object.isFrozen(v.config?.tools?.[0]?.parameters));
    assert.throws(() => {
      (v.config as { model?: string }).model = "other";
    }, TypeError);
  });

  test("null without one, and from a server before config", () => {
    assert.equal(version("Hi", "text", null).config, null);
    assert.equal(PromptVersion.fromJson(versionBody()).config, null);
    assert.equal(PromptVersion.fallback("greeting", "Hi").config, null);
  });

  test("toOpenAI copies: changing its answer changes nothing", () => {
    const v = version("Hi", "text", config);
    const args = v.toOpenAI();
    args.tools?.pop();
    assert.equal(v.toOpenAI().tools?.length, 2);
  });

  test("toOpenAI renders strictly, as render() does", () => {
    assert.throws(() => version("Hi {{name}}", "text", null).toOpenAI(), /name/);
  });

  for (const [label, bad] of [
    ["not an object", "gpt-4o"],
    ["params not an object", { params: [] }],
    ["a param of the wrong type", { params: { temperature: "hot" } }],
    ["an integer param not whole", { params: { max_tokens: 1.5 } }],
    ["a tool without parameters", { tools: [{ name: "x" }] }],
    ["a response_format without a known type", { response_format: { type: "xml" } }],
  ] as const) {
    test(`a malformed config is refused when read: ${label}`, () => {
      assert.throws(() => version("Hi", "text", bad), (e: unknown) => e instanceof ModelError && /config/.test(e.message));
    });
  }
});
