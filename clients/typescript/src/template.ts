/**
 * The `{{variable}}` grammar and the variable contract (docs/typescript.md, "Rendering").
 *
 * A placeholder is `{{ name }}`: inner whitespace allowed, a name matches
 * `[A-Za-z_][A-Za-z0-9_.]*`; anything else between braces is plain text. Chat prompts keep
 * their content as a JSON list of `{role, content}` messages; their variables come from
 * every message.
 *
 * The contract: a version's `variables_schema` maps each variable to `{type, required?,
 * description?, default?, enum?}`. A declared schema is checked strictly (an `integer`
 * refuses `"3"` and `true`); without one every variable is a required string that accepts
 * any value. A default fills an absent variable; an optional one without a default
 * renders as "". Every problem is collected into one TemplateError.
 */

import { TemplateError, type TemplateProblem, isRecord } from "./errors.js";

export type VariableType = "string" | "integer" | "number" | "boolean";
export type VariableValue = string | number | boolean;

export interface VariableSpec {
  readonly type: VariableType;
  /** Default true; a `default` makes the variable optional. */
  readonly required?: boolean;
  readonly description?: string;
  readonly default?: VariableValue;
  readonly enum?: readonly VariableValue[];
}

export type VariablesSchema = Readonly<Record<string, VariableSpec>>;

export interface ChatMessage {
  role: string;
  content: string;
}

// Python's \s (what the service extracts variables with), not JavaScript's: JavaScript's
// adds U+FEFF and lacks U+001C-U+001F and U+0085.
const SPACE = "[\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*";
const PLACEHOLDER = new RegExp(`\\{\\{${SPACE}([A-Za-z_][A-Za-z0-9_.]*)${SPACE}\\}\\}`, "g");

/** The messages of chat content; TemplateError when it is not a list of them. */
export function parseChat(content: string): ChatMessage[] {
  let messages: unknown;
  try {
    messages = JSON.parse(content);
  } catch {
    throw new TemplateError("chat content must be a JSON list of messages");
  }
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new TemplateError("chat content must be a non-empty JSON list of messages");
  }
  messages.forEach((message: unknown, i) => {
    const keys = isRecord(message) ? Object.keys(message).sort().join(",") : "";
    if (
      !isRecord(message) ||
      keys !== "content,role" ||
      typeof message["role"] !== "string" ||
      message["role"] === "" ||
      typeof message["content"] !== "string"
    ) {
      throw new TemplateError(`chat message ${i} must be an object with string 'role' and 'content' only`);
    }
  });
  return messages as ChatMessage[];
}

/** Unique placeholder names in first-seen order; chat content is validated. */
export function extractVariables(content: string, promptType: string): string[] {
  const seen = new Set<string>();
  const texts = promptType === "chat" ? parseChat(content).map((m) => m.content) : [content];
  for (const text of texts) for (const match of text.matchAll(PLACEHOLDER)) seen.add(match[1] as string);
  return [...seen];
}

/** The schema a version without one has: every variable a required string. */
export function impliedSchema(variables: readonly string[]): VariablesSchema {
  return Object.fromEntries(variables.map((name) => [name, { type: "string", required: true }]));
}

/**
 * Whether `schema` says no more than the implied one (every entry exactly `{type:
 * "string", required: true}`): such a schema is what a version without a declared one
 * carries, and its strings accept any value.
 */
export function isImplied(schema: VariablesSchema): boolean {
  return Object.values(schema).every(
    (spec) => spec.type === "string" && spec.required !== false && Object.keys(spec).every((k) => k === "type" || k === "required"),
  );
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "string") return `string ${JSON.stringify(value)}`;
  if (typeof value === "number" || typeof value === "boolean") return `${typeof value} ${String(value)}`;
  return typeof value;
}

function typeProblem(type: VariableType, value: unknown): string | null {
  const ok =
    (type === "string" && typeof value === "string") ||
    (type === "integer" && typeof value === "number" && Number.isInteger(value)) ||
    (type === "number" && typeof value === "number" && Number.isFinite(value)) ||
    (type === "boolean" && typeof value === "boolean");
  return ok ? null : `expected ${type}, got ${describe(value)}`;
}

/** How a value appears in the text: strings as they are, objects as JSON, the rest String(). */
export function show(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "object" && value !== null) return JSON.stringify(value);
  return String(value);
}

/** The text of every variable, or TemplateError naming every problem. */
export function resolveValues(
  variables: readonly string[],
  schema: VariablesSchema,
  implied: boolean,
  values: Readonly<Record<string, unknown>>,
): Map<string, string> {
  const filled = new Map<string, string>();
  const problems: TemplateProblem[] = [];
  const names = new Set([...variables, ...Object.keys(schema)]);
  for (const name of names) {
    const spec: VariableSpec = schema[name] ?? { type: "string" };
    const given = Object.hasOwn(values, name) ? values[name] : undefined;
    if (given === undefined) {
      if (spec.default !== undefined) filled.set(name, show(spec.default));
      else if (spec.required === false) filled.set(name, "");
      else problems.push({ variable: name, problem: "missing required variable" });
      continue;
    }
    const lenient = implied || schema[name] === undefined;
    const wrong = lenient ? null : typeProblem(spec.type, given);
    if (wrong !== null) {
      problems.push({ variable: name, problem: wrong });
    } else if (!lenient && spec.enum !== undefined && !spec.enum.includes(given as VariableValue)) {
      const allowed = spec.enum.map((v) => JSON.stringify(v)).join(", ");
      problems.push({ variable: name, problem: `${JSON.stringify(given)} is not one of ${allowed}` });
    } else {
      filled.set(name, show(given));
    }
  }
  if (problems.length > 0) {
    const list = problems.map((p) => `'${p.variable}': ${p.problem}`).join("; ");
    throw new TemplateError(`cannot render: ${list}`, problems);
  }
  return filled;
}

function fill(text: string, filled: ReadonlyMap<string, string>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => filled.get(name) ?? whole);
}

/** Fill the placeholders of `content`: text gives a string, chat a list of messages. */
export function render(
  content: string,
  promptType: string,
  filled: ReadonlyMap<string, string>,
): string | ChatMessage[] {
  if (promptType === "chat") {
    return parseChat(content).map((m) => ({ role: m.role, content: fill(m.content, filled) }));
  }
  return fill(content, filled);
}
