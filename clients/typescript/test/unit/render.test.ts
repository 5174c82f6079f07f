/** render(): the placeholder grammar and the variable contract (declared and implied schemas). */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { PromptVersion, TemplateError, type VariablesSchema } from "../../src/index.js";
import { contentVariables, extractVariables, impliedSchema } from "../../src/template.js";
import { versionBody } from "../support/fake-service.js";

function text(content: string, variables: string[], schema?: VariablesSchema): PromptVersion {
  const body = versionBody({ content, variables });
  if (schema !== undefined) body["variables_schema"] = schema;
  return PromptVersion.fromJson(body);
}

function problems(run: () => unknown): Array<[string, string]> {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof TemplateError, String(error));
    return error.problems.map((p) => [p.variable, p.problem]);
  }
  assert.fail("render did not throw");
}

describe("placeholders", () => {
  test("inner whitespace, dotted names, repeats; other braces are text", () => {
    const v = text("{{ user.name }} {{user.name}} {{\tn_2 }} {{ not a var }} {x} {{1bad}}", ["user.name", "n_2"]);
    assert.equal(v.render({ "user.name": "Ada", n_2: "x" }), "Ada Ada x {{ not a var }} {x} {{1bad}}");
  });

  test("values are inserted once, not read as templates or replacement patterns", () => {
    const v = text("{{a}} {{b}}", ["a", "b"]);
    assert.equal(v.render({ a: "{{b}}", b: "$& $1" }), "{{b}} $& $1");
  });

  test("chat content renders every message", () => {
    const messages = [
      { role: "system", content: "You help with {{product}}." },
      { role: "user", content: "{{question}}" },
    ];
    const v = PromptVersion.fromJson(versionBody({ prompt_type: "chat", content: JSON.stringify(messages), variables: ["product", "question"] }));
    assert.deepEqual(v.render({ product: "promptsvc", question: "Why?" }), [
      { role: "system", content: "You help with promptsvc." },
      { role: "user", content: "Why?" },
    ]);
  });

  test("chat content that is not a list of {role, content} is a TemplateError", () => {
    for (const content of ["not json", "[]", '[{"role":"user"}]', '[{"role":"","content":"x"}]', '[{"role":"u","content":"x","extra":1}]']) {
      const v = PromptVersion.fromJson(versionBody({ prompt_type: "chat", content, variables: [] }));
      assert.throws(() => v.render({}), TemplateError, content);
    }
  });
});

describe("implied schema (none declared)", () => {
  test("every variable is a required string that accepts any value", () => {
    const v = text("{{a}}|{{b}}|{{c}}|{{d}}", ["a", "b", "c", "d"]);
    assert.equal(v.render({ a: 3, b: true, c: "s", d: { k: [1] } }), '3|true|s|{"k":[1]}');
  });

  test("every missing variable is named in one TemplateError; extras are ignored", () => {
    const v = text("{{a}} {{b}} {{c}}", ["a", "b", "c"]);
    assert.deepEqual(problems(() => v.render({ b: "x", extra: 1 })), [
      ["a", "missing required variable"],
      ["c", "missing required variable"],
    ]);
    assert.throws(() => v.render({}), /cannot render: 'a': missing required variable; 'b': missing required variable; 'c'/);
  });

  test("undefined counts as missing; null is a value", () => {
    const v = text("{{a}}", ["a"]);
    assert.deepEqual(problems(() => v.render({ a: undefined })), [["a", "missing required variable"]]);
    assert.equal(v.render({ a: null }), "null");
  });

  test("a schema sent that says no more than the implied one behaves as implied", () => {
    const v = text("{{a}}", ["a"], { a: { type: "string", required: true } });
    assert.equal(v.render({ a: 7 }), "7");
  });
});

describe("declared schema", () => {
  const schema: VariablesSchema = {
    name: { type: "string" },
    count: { type: "integer" },
    ratio: { type: "number", required: false },
    loud: { type: "boolean", default: false },
    tone: { type: "string", enum: ["kind", "terse"], default: "kind" },
    level: { type: "integer", enum: [1, 2, 3], required: false },
  };
  const v = text("{{name}}|{{count}}|{{ratio}}|{{loud}}|{{tone}}|{{level}}", ["name", "count", "ratio", "loud", "tone", "level"], schema);

  test("defaults fill absent variables; an optional one without a default is empty", () => {
    assert.equal(v.render({ name: "Ada", count: 3 }), "Ada|3||false|kind|");
    assert.equal(v.render({ name: "Ada", count: 0, ratio: 0.5, loud: true, tone: "terse", level: 2 }), "Ada|0|0.5|true|terse|2");
  });

  test("types are strict: integer refuses '3', true and 3.5; string refuses 3", () => {
    assert.deepEqual(problems(() => v.render({ name: 3, count: "3" })), [
      ["name", "expected string, got number 3"],
      ["count", 'expected integer, got string "3"'],
    ]);
    assert.deepEqual(problems(() => v.render({ name: "a", count: true, ratio: "0.5", loud: "yes" })), [
      ["count", "expected integer, got boolean true"],
      ["ratio", 'expected number, got string "0.5"'],
      ["loud", 'expected boolean, got string "yes"'],
    ]);
    assert.deepEqual(problems(() => v.render({ name: "a", count: 3.5, ratio: Number.NaN })), [
      ["count", "expected integer, got number 3.5"],
      ["ratio", "expected number, got number NaN"],
    ]);
  });

  test("enums refuse other values; every problem is reported at once", () => {
    assert.deepEqual(problems(() => v.render({ count: 1, tone: "rude", level: 4 })), [
      ["name", "missing required variable"],
      ["tone", '"rude" is not one of "kind", "terse"'],
      ["level", "4 is not one of 1, 2, 3"],
    ]);
  });

  test("the schema is exposed, frozen, with the examples", () => {
    const withExamples = PromptVersion.fromJson({
      ...versionBody({ content: "{{n}}", variables: ["n"] }),
      variables_schema: { n: { type: "integer", description: "how many" } },
      examples: [{ name: "one", variables: { n: 1 } }],
    });
    assert.equal(withExamples.variables_schema["n"]?.description, "how many");
    assert.deepEqual(withExamples.examples, [{ name: "one", variables: { n: 1 } }]);
    assert.ok(Object.isFrozen(withExamples.variables_schema["n"]));
    const example = withExamples.examples[0];
    assert.equal(example && withExamples.render(example.variables), "1");
  });

  test("a malformed schema is refused when the answer is read", () => {
    assert.throws(() => text("{{a}}", ["a"], { a: { type: "date" } } as unknown as VariablesSchema), /variables_schema entry 'a'/);
  });
});

interface RenderCase {
  name: string;
  prompt_type: string;
  content: string;
  values: Record<string, string>;
  variables: string[];
  expected?: unknown;
  missing?: string[];
}

// Read by the Python SDK's tests too (tests/client/test_sdk_render_vectors.py).
const RENDER = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/render.json", import.meta.url), "utf-8")) as {
  cases: RenderCase[];
};

describe("shared render vectors", () => {
  for (const c of RENDER.cases) {
    test(c.name, () => {
      assert.deepEqual(extractVariables(c.content, c.prompt_type), c.variables);
      const v = PromptVersion.fromJson(versionBody({ content: c.content, prompt_type: c.prompt_type, variables: c.variables }));
      if (c.missing !== undefined) {
        assert.deepEqual(problems(() => v.render(c.values)).map(([name]) => name), c.missing);
      } else {
        assert.deepEqual(v.render(c.values), c.expected);
      }
    });
  }
});

interface ContractCase {
  name: string;
  prompt_type: string;
  content: string;
  schema: VariablesSchema | null;
  values: Record<string, unknown>;
  expected?: unknown;
  problems?: Array<[string, string]>;
}

// Read by the Python SDK's tests too (tests/client/test_sdk_contract_vectors.py).
const CONTRACTS = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/contracts.json", import.meta.url), "utf-8")) as {
  cases: ContractCase[];
};

describe("shared contract vectors", () => {
  for (const c of CONTRACTS.cases) {
    test(c.name, () => {
      const body = versionBody({ content: c.content, prompt_type: c.prompt_type, variables: extractVariables(c.content, c.prompt_type) });
      body["variables_schema"] = c.schema;
      const v = PromptVersion.fromJson(body);
      if (c.problems !== undefined) {
        assert.deepEqual(problems(() => v.render(c.values)), c.problems);
        const listed = c.problems.map(([name, problem]) => `'${name}': ${problem}`).join("; ");
        assert.throws(() => v.render(c.values), { message: `cannot render: ${listed}` });
      } else {
        assert.deepEqual(v.render(c.values), c.expected);
      }
    });
  }
});

interface SectionCase {
  name: string;
  prompt_type: string;
  content: string;
  values: Record<string, unknown>;
  schema?: VariablesSchema;
  variables?: string[];
  sections?: string[];
  expected?: unknown;
  problems?: Array<[string, string]>;
  error?: string;
}

// Read by the Python SDK's tests too (tests/client/test_sdk_section_vectors.py).
const SECTIONS = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/sections.json", import.meta.url), "utf-8")) as {
  cases: SectionCase[];
};

describe("shared section vectors", () => {
  for (const c of SECTIONS.cases) {
    test(c.name, () => {
      if (c.error !== undefined) {
        assert.throws(() => contentVariables(c.content, c.prompt_type), { name: "TemplateError", message: c.error });
        const v = PromptVersion.fromJson(versionBody({ content: c.content, prompt_type: c.prompt_type, variables: [] }));
        assert.throws(() => v.render(c.values), { name: "TemplateError", message: c.error });
        return;
      }
      assert.deepEqual(contentVariables(c.content, c.prompt_type), [c.variables, c.sections]);
      // As the service answers: without a declared schema, no variables_schema from an old
      // service (the SDK implies it) or the implied one it sends; both render alike.
      const bodies = [versionBody({ content: c.content, prompt_type: c.prompt_type, variables: c.variables })];
      const sent = versionBody({ content: c.content, prompt_type: c.prompt_type, variables: c.variables });
      sent["variables_schema"] = c.schema ?? impliedSchema(c.variables ?? [], c.sections ?? []);
      bodies.push(sent);
      for (const body of c.schema === undefined ? bodies : [sent]) {
        const v = PromptVersion.fromJson(body);
        if (c.problems !== undefined) {
          assert.deepEqual(problems(() => v.render(c.values)), c.problems);
        } else {
          assert.deepEqual(v.render(c.values), c.expected);
        }
      }
    });
  }
});
