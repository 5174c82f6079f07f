/**
 * The `{{variable}}` grammar and the variable contract (docs/typescript.md, "Rendering").
 *
 * A placeholder is `{{ name }}`: inner whitespace allowed, a name matches
 * `[A-Za-z_][A-Za-z0-9_.]*`; anything else between braces is plain text. Chat prompts keep
 * their content as a JSON list of `{role, content}` messages; their variables come from
 * every message.
 *
 * Sections (`{{#flag}}...{{/flag}}`, `{{^flag}}...{{/flag}}`): see sections.ts; a section's
 * variable is a boolean, implied optional and false when no schema is declared.
 *
 * The contract: a version's `variables_schema` maps each variable to `{type, required?,
 * description?, default?, enum?}`. A declared schema is checked strictly (an `integer`
 * refuses `"3"` and `true`); without one every variable is a required string that accepts
 * any value. A default fills an absent variable; an optional one without a default
 * renders as "". Every problem is collected into one TemplateError.
 */

import { TemplateError, type TemplateProblem, isRecord } from "./errors.js";
import { type Part, SectionError, collect, fill as fillParts, parse, tagPattern } from "./sections.js";

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
const TAG = tagPattern(SPACE);

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

function parts(text: string, where = ""): readonly Part[] {
  try {
    return parse(text, TAG);
  } catch (error) {
    if (error instanceof SectionError) throw new TemplateError(`${where}${error.message}`);
    throw error;
  }
}

/** Each text of the content (a chat prompt's messages, with their roles) as plain text and sections. */
function texts(content: string, promptType: string): Array<[string, readonly Part[]]> {
  if (promptType === "chat") return parseChat(content).map((m, i) => [m.role, parts(m.content, `chat message ${i}: `)]);
  return [["", parts(content)]];
}

function variablesOf(found: Array<[string, readonly Part[]]>): [string[], string[]] {
  const seen = new Set<string>();
  const sections = new Set<string>();
  const placeholders = new Set<string>();
  for (const [, p] of found) collect(p, PLACEHOLDER, seen, sections, placeholders);
  const both = [...sections].filter((name) => placeholders.has(name));
  if (both.length > 0) {
    const names = both.map((name) => `'${name}'`).join(", ");
    throw new TemplateError(`used both as a section and as a placeholder: ${names} (a section's variable is a boolean, a placeholder's is text)`);
  }
  return [[...seen], [...sections]];
}

/**
 * `[variables, sections]`: every variable in first-seen order (placeholders and section
 * names alike) and the section names among them. TemplateError for content the service
 * refuses (a chat list that is not messages, a broken section tag, a name used both ways).
 */
export function contentVariables(content: string, promptType: string): [string[], string[]] {
  return variablesOf(texts(content, promptType));
}

/** Unique variable names (placeholders and sections) in first-seen order; the content is validated. */
export function extractVariables(content: string, promptType: string): string[] {
  return contentVariables(content, promptType)[0];
}

/** The content's section variables; none when the content is not valid (render() says why). */
export function sectionNames(content: string, promptType: string): string[] {
  if (!content.includes("{{#") && !content.includes("{{^")) return [];
  try {
    return contentVariables(content, promptType)[1];
  } catch {
    return [];
  }
}

/** A section variable's entry when no schema is declared: an optional boolean, false by default. */
export const IMPLIED_SECTION: VariableSpec = Object.freeze({ type: "boolean", required: false, default: false });

/** The schema a version without one has: every variable a required string, a section's an optional boolean. */
export function impliedSchema(variables: readonly string[], sections: readonly string[] = []): VariablesSchema {
  return Object.fromEntries(
    variables.map((name) => [name, sections.includes(name) ? { ...IMPLIED_SECTION } : { type: "string", required: true }]),
  );
}

/**
 * Whether `schema` says no more than the implied one (every entry exactly `{type:
 * "string", required: true}` or exactly IMPLIED_SECTION): such a schema is what a version
 * without a declared one carries, and its strings accept any value (its booleans do not).
 */
export function isImplied(schema: VariablesSchema): boolean {
  return Object.values(schema).every(
    (spec) =>
      (spec.type === "string" && spec.required !== false && Object.keys(spec).every((k) => k === "type" || k === "required")) ||
      (Object.keys(spec).length === 3 && spec.type === "boolean" && spec.required === false && spec.default === false),
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
    // Only the implied contract's strings accept any value; its section booleans do not.
    const lenient = (implied && spec.type === "string") || schema[name] === undefined;
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

function fill(found: readonly Part[], filled: ReadonlyMap<string, string>): string {
  const out: string[] = [];
  fillParts(found, PLACEHOLDER, filled, out);
  return out.join("");
}

/** Fill the placeholders of `content` and keep or drop its sections: text gives a string, chat a list of messages. */
export function render(content: string, promptType: string, filled: ReadonlyMap<string, string>): string | ChatMessage[] {
  const found = texts(content, promptType);
  variablesOf(found); // content the service refuses is refused here too
  if (promptType === "chat") return found.map(([role, p]) => ({ role, content: fill(p, filled) }));
  return fill((found[0] as [string, readonly Part[]])[1], filled);
}
