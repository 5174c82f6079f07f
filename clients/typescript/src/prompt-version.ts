/** The client-side PromptVersion: the API's answer with its JSON field names (docs/api.md section 4.1). */

import { isRecord } from "./errors.js";
import { configProblem, type ModelConfig, type OpenAIChatArguments, openAIArguments } from "./model-config.js";
import {
  type ChatMessage,
  type VariablesSchema,
  extractVariables,
  impliedSchema,
  isImplied,
  render,
  resolveValues,
  sectionNames,
} from "./template.js";
import { annotate } from "./tracing.js";
import { type UsageCounter, usageOf, type VersionUsage } from "./usage.js";

/** Fallback content: text, or chat messages. */
export type FallbackContent = string | readonly ChatMessage[];
/** What `fallback` takes: content, or a function of the prompt name that returns it
 * (called only when the fallback is served). */
export type Fallback = FallbackContent | ((name: string) => FallbackContent);

export interface Example {
  readonly name?: string;
  readonly variables: Readonly<Record<string, unknown>>;
}

/** A version spliced into this one by an include (docs/composition.md): `ref` is the
 * environment or version number written, null for a floating include; `version` and
 * `version_id` are null when it resolved to nothing. */
export interface Include {
  readonly name: string;
  readonly ref: string | number | null;
  readonly version: number | null;
  readonly version_id: string | null;
}

function includesOf(value: unknown): readonly Include[] {
  if (value === undefined || value === null) return Object.freeze([]); // a server before includes
  if (!Array.isArray(value) || !value.every((i) => isRecord(i) && typeof i["name"] === "string")) {
    throw new ModelError("field 'includes' must be a list of {name, ref, version, version_id}");
  }
  return deepFreeze(value) as readonly Include[];
}

/** A rollout in progress on the environment read (docs/typescript.md, "Rollouts"). */
export interface Rollout {
  readonly rollout_id: string;
  readonly percent: number;
  readonly candidate: PromptVersion;
}

/** Give `version` (and its rollout's candidate) the key its renders count under in
 * `counter` (null: not counted) and its span attributes (docs/usage.md). The client
 * calls it on each version it fetches (after `loadTracing`); not exported by the package. */
export let tagVersion: (version: PromptVersion, environment: string | null, counter: UsageCounter | null) => void;
/** What `tagVersion` gave `version`, null when untagged (a fallback, one not fetched). */
export let usageTag: (version: PromptVersion) => VersionUsage | null;

/** A response body that is not a PromptVersion; the message names the field. */
export class ModelError extends Error {
  override name = "ModelError";
}

type Body = Record<string, unknown>;

function field<T>(body: Body, name: string, check: (v: unknown) => v is T, what: string): T {
  const value = body[name];
  if (!check(value)) throw new ModelError(`field '${name}' missing or not ${what}`);
  return value;
}

const isString = (v: unknown): v is string => typeof v === "string";
const isInt = (v: unknown): v is number => Number.isInteger(v);
const isBool = (v: unknown): v is boolean => typeof v === "boolean";
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);
const isStringOrNull = (v: unknown): v is string | null => v === null || typeof v === "string";
const TYPES = new Set(["string", "integer", "number", "boolean"]);

function schemaOf(value: unknown, variables: readonly string[], sections: () => string[]): VariablesSchema {
  if (value === undefined || value === null) return impliedSchema(variables, sections());
  if (!isRecord(value)) throw new ModelError("field 'variables_schema' must be an object");
  for (const [name, spec] of Object.entries(value)) {
    if (!isRecord(spec) || !TYPES.has(spec["type"] as string)) {
      throw new ModelError(`variables_schema entry '${name}' needs a type of string, integer, number or boolean`);
    }
    if (spec["enum"] !== undefined && !Array.isArray(spec["enum"])) {
      throw new ModelError(`variables_schema entry '${name}': enum must be a list`);
    }
  }
  return deepFreeze(value) as unknown as VariablesSchema;
}

function examplesOf(value: unknown): readonly Example[] {
  if (value === undefined || value === null) return Object.freeze([]);
  if (!Array.isArray(value) || !value.every((e) => isRecord(e) && isRecord(e["variables"]))) {
    throw new ModelError("field 'examples' must be a list of {name?, variables}");
  }
  return deepFreeze(value) as readonly Example[];
}

function configOf(value: unknown): ModelConfig | null {
  if (value === undefined || value === null) return null; // none, or a server before config
  const problem = configProblem(value);
  if (problem !== null) throw new ModelError(`field 'config': ${problem}`);
  return deepFreeze(value) as ModelConfig;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * One prompt version as the service returned it, frozen (everyone reading the same cache
 * entry shares it). Field names are the API's; `is_fallback` is true only for the
 * stand-in built from `fallback`. Timestamps stay RFC 3339 strings, as the API sends them.
 */
export class PromptVersion {
  readonly prompt_id: string;
  readonly version_id: string;
  readonly name: string;
  readonly version: number;
  /** The resolved text: includes spliced in by the service. */
  readonly content: string;
  /** The content as written, includes unexpanded (equal to `content` without includes). */
  readonly source_content: string;
  /** Every version spliced in, at every level, depth first, each once. */
  readonly includes: readonly Include[];
  readonly variables: readonly string[];
  readonly status: string;
  readonly is_production: boolean;
  readonly prompt_type: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly tags: readonly string[];
  readonly created_at: string;
  readonly updated_at: string;
  readonly promoted_at: string | null;
  readonly promoted_by: string | null;
  /** Environments holding this version, when the service reports them. */
  readonly environments: readonly string[];
  /** The declared schema, or the implied one (every variable a required string). */
  readonly variables_schema: VariablesSchema;
  readonly examples: readonly Example[];
  /** The model configuration as stored (docs/model-config.md), null when none. */
  readonly config: ModelConfig | null;
  /** The rollout under way on the environment read, else null. */
  readonly rollout: Rollout | null;
  readonly is_fallback: boolean;
  /** True only for a version read from the snapshot (`snapshotStore`) that the service
   * has not confirmed since. */
  readonly is_stale: boolean;
  readonly #implied: boolean;
  // Set by the client that fetched it (tagVersion): the key its renders count under, the
  // tally they go to, and its span attributes. A private field: freezing leaves it.
  #usage: VersionUsage | null = null;

  static {
    tagVersion = (version, environment, counter) => {
      if (version.is_fallback || version.prompt_id === "") return;
      const rollout = version.rollout;
      if (rollout === null) {
        version.#usage = usageOf(version, environment, null, null, counter);
        return;
      }
      version.#usage = usageOf(version, environment, rollout.rollout_id, "baseline", counter);
      rollout.candidate.#usage = usageOf(rollout.candidate, environment, rollout.rollout_id, "candidate", counter);
    };
    usageTag = (version) => version.#usage;
  }

  private constructor(body: Body, rollout: Rollout | null, isFallback: boolean, isStale = false) {
    this.prompt_id = field(body, "prompt_id", isString, "a string");
    this.version_id = field(body, "version_id", isString, "a string");
    this.name = field(body, "name", isString, "a string");
    this.version = field(body, "version", isInt, "an integer");
    this.content = field(body, "content", isString, "a string");
    const source = body["source_content"] ?? this.content;
    if (!isString(source)) throw new ModelError("field 'source_content' missing or not a string");
    this.source_content = source;
    this.includes = includesOf(body["includes"]);
    this.variables = Object.freeze([...field(body, "variables", isStrings, "a list of strings")]);
    this.status = field(body, "status", isString, "a string");
    this.is_production = field(body, "is_production", isBool, "a boolean");
    this.prompt_type = field(body, "prompt_type", isString, "a string");
    this.metadata = deepFreeze({ ...field(body, "metadata", isRecord, "an object") });
    this.tags = Object.freeze([...field(body, "tags", isStrings, "a list of strings")]);
    this.created_at = field(body, "created_at", isString, "a string");
    this.updated_at = field(body, "updated_at", isString, "a string");
    this.promoted_at = field(body, "promoted_at", isStringOrNull, "a string or null");
    this.promoted_by = field(body, "promoted_by", isStringOrNull, "a string or null");
    const environments = body["environments"] ?? [];
    if (!isStrings(environments)) throw new ModelError("field 'environments' must be a list of strings");
    this.environments = Object.freeze([...environments]);
    this.#implied = body["variables_schema"] === undefined || body["variables_schema"] === null;
    this.variables_schema = schemaOf(body["variables_schema"], this.variables, () => sectionNames(this.content, this.prompt_type));
    this.#implied ||= isImplied(this.variables_schema);
    this.examples = examplesOf(body["examples"]);
    this.config = configOf(body["config"]);
    this.rollout = rollout;
    this.is_fallback = isFallback;
    this.is_stale = isStale;
    Object.freeze(this);
  }

  /** The names of the prompts spliced into it: a change of any of them changes it. */
  get included_prompts(): ReadonlySet<string> {
    return new Set(this.includes.map((i) => i.name));
  }

  /**
   * Build from a decoded response body; throws ModelError naming a bad field. A
   * `rollout` field becomes `rollout.candidate`, itself a PromptVersion carrying the same
   * `rollout`, so whichever of the two a caller gets says which rollout it came from.
   */
  static fromJson(body: unknown, stale = false): PromptVersion {
    if (!isRecord(body)) throw new ModelError("body is not a JSON object");
    const raw = body["rollout"];
    if (raw === undefined || raw === null) return new PromptVersion(body, null, false, stale);
    if (!isRecord(raw) || !isString(raw["rollout_id"]) || typeof raw["percent"] !== "number" || !isRecord(raw["candidate"])) {
      throw new ModelError("field 'rollout' must be {rollout_id, percent, candidate}");
    }
    const info: { rollout_id: string; percent: number; candidate: PromptVersion | null } = {
      rollout_id: raw["rollout_id"],
      percent: raw["percent"],
      candidate: null,
    };
    const rollout = info as Rollout;
    info.candidate = new PromptVersion(raw["candidate"], rollout, false, stale);
    Object.freeze(info);
    return new PromptVersion(body, rollout, false, stale);
  }

  /**
   * The stand-in for `name` built from the caller's own content: `is_fallback` true,
   * `version` 0, empty ids, status `fallback`. A string is a text prompt, a list of
   * `{role, content}` messages a chat prompt; TemplateError when the messages are not that.
   */
  static fallback(name: string, content: FallbackContent): PromptVersion {
    const chat = typeof content !== "string";
    const text = chat ? JSON.stringify(content) : content;
    const promptType = chat ? "chat" : "text";
    const now = new Date().toISOString();
    const body: Body = {
      prompt_id: "",
      version_id: "",
      name,
      version: 0,
      content: text,
      variables: extractVariables(text, promptType),
      status: "fallback",
      is_production: false,
      prompt_type: promptType,
      metadata: {},
      tags: [],
      created_at: now,
      updated_at: now,
      promoted_at: null,
      promoted_by: null,
    };
    return new PromptVersion(body, null, true);
  }

  /**
   * Fill the `{{variable}}` placeholders and keep or drop the `{{#flag}}` sections (a
   * section's variable is a boolean): a text prompt gives a string, a chat prompt a
   * list of `{role, content}` messages (narrow on `prompt_type` or the result). Values are checked against `variables_schema`; every problem is
   * reported at once in one TemplateError. Values for variables the prompt lacks are
   * ignored. Each render of a version a client fetched is counted (docs/usage.md) and,
   * with `@opentelemetry/api` installed, described on the active span.
   */
  render(values: Readonly<Record<string, unknown>> = {}): string | ChatMessage[] {
    const filled = resolveValues(this.variables, this.variables_schema, this.#implied, values);
    const rendered = render(this.content, this.prompt_type, filled);
    const usage = this.#usage;
    if (usage !== null) {
      if (usage.tally !== null) usage.tally.renders += 1;
      if (usage.attributes !== null) annotate(usage.attributes);
    }
    return rendered;
  }

  /**
   * The arguments of OpenAI's Chat Completions call for this version rendered with
   * `values` (as `render` checks them): `{model, messages, <each param>, tools: [{type:
   * "function", function: {name, description, parameters}}], response_format}`, leaving out
   * what the config does not set. A text prompt is one `user` message, a chat prompt its
   * messages: `openai.chat.completions.create(version.toOpenAI({ name: "Ada" }))`.
   */
  toOpenAI(values: Readonly<Record<string, unknown>> = {}): OpenAIChatArguments {
    const rendered = this.render(values);
    const messages = typeof rendered === "string" ? [{ role: "user", content: rendered }] : rendered;
    return openAIArguments(this.config, messages);
  }
}
