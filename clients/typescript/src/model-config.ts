/**
 * A version's model configuration (docs/model-config.md): `version.config`, typed with
 * the API's field names and frozen, and the OpenAI Chat Completions arguments it gives
 * (`version.toOpenAI()`). The service validated it; this reads the shape only and keeps
 * the object as stored, so only what was set is passed on.
 */

import { isRecord } from "./errors.js";
import type { ChatMessage } from "./template.js";

/** Sampling parameters; a key that is absent is not set (the provider's default). */
export interface ModelParams {
  readonly temperature?: number;
  readonly top_p?: number;
  readonly max_tokens?: number;
  readonly stop?: readonly string[];
  readonly presence_penalty?: number;
  readonly frequency_penalty?: number;
  readonly seed?: number;
}

/** A function the model may call; `parameters` is its JSON Schema. */
export interface Tool {
  readonly name: string;
  readonly description?: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

export interface ResponseFormat {
  readonly type: "text" | "json_object" | "json_schema";
  readonly json_schema?: {
    readonly name: string;
    readonly schema: Readonly<Record<string, unknown>>;
    readonly strict?: boolean;
  };
}

export interface ModelConfig {
  readonly model?: string;
  readonly provider?: string;
  readonly params?: ModelParams;
  readonly tools?: readonly Tool[];
  readonly response_format?: ResponseFormat;
}

/** The arguments of OpenAI's `client.chat.completions.create()`. */
export interface OpenAIChatArguments {
  model?: string;
  messages: ChatMessage[];
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  stop?: string[];
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  tools?: Array<{
    type: "function";
    function: { name: string; description?: string; parameters: Record<string, unknown> };
  }>;
  response_format?: {
    type: "text" | "json_object" | "json_schema";
    json_schema?: { name: string; schema: Record<string, unknown>; strict?: boolean };
  };
}

const NUMBERS = ["temperature", "top_p", "presence_penalty", "frequency_penalty", "max_tokens", "seed"];
const FORMATS = new Set(["text", "json_object", "json_schema"]);

/** `value` checked for the shape of a config; the message names the bad field. */
export function configProblem(value: unknown): string | null {
  if (!isRecord(value)) return "config must be an object";
  for (const key of ["model", "provider"]) {
    if (value[key] !== undefined && typeof value[key] !== "string") return `config.${key} must be a string`;
  }
  const params = value["params"];
  if (params !== undefined) {
    if (!isRecord(params)) return "config.params must be an object";
    for (const name of NUMBERS) {
      if (params[name] !== undefined && typeof params[name] !== "number") return `config.params.${name} must be a number`;
    }
    for (const name of ["max_tokens", "seed"]) {
      if (params[name] !== undefined && !Number.isInteger(params[name])) return `config.params.${name} must be an integer`;
    }
    const stop = params["stop"];
    if (stop !== undefined && !(Array.isArray(stop) && stop.every((s) => typeof s === "string"))) {
      return "config.params.stop must be a list of strings";
    }
  }
  const tools = value["tools"];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return "config.tools must be a list";
    for (const [i, tool] of tools.entries()) {
      if (!isRecord(tool) || typeof tool["name"] !== "string" || !isRecord(tool["parameters"])) {
        return `config.tools[${i}] must be {name, description?, parameters}`;
      }
    }
  }
  const format = value["response_format"];
  if (format !== undefined && !(isRecord(format) && FORMATS.has(format["type"] as string))) {
    return "config.response_format must be {type: text | json_object | json_schema, json_schema?}";
  }
  return null;
}

function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * OpenAI's Chat Completions arguments for a version configured by `config` whose rendered
 * text is `messages`: `{model, messages, <each param>, tools: [{type: "function",
 * function: {name, description, parameters}}], response_format}`, leaving out what the
 * config does not set (as promptsvc/templating/config.py's openai_arguments does).
 */
export function openAIArguments(config: ModelConfig | null, messages: ChatMessage[]): OpenAIChatArguments {
  const args: Record<string, unknown> = {};
  if (config?.model !== undefined) args["model"] = config.model;
  args["messages"] = messages;
  for (const [name, value] of Object.entries(config?.params ?? {})) args[name] = copy(value);
  if (config?.tools !== undefined && config.tools.length > 0) {
    args["tools"] = config.tools.map((tool) => ({
      type: "function",
      function: {
        name: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parameters: copy(tool.parameters),
      },
    }));
  }
  if (config?.response_format !== undefined) args["response_format"] = copy(config.response_format);
  return args as unknown as OpenAIChatArguments;
}
