/**
 * @promptsvc/client: the promptsvc SDK for Node.js and any runtime with fetch and Web
 * Crypto (docs/typescript.md).
 *
 * ```ts
 * import { PromptClient } from "@promptsvc/client";
 *
 * const client = new PromptClient({ baseUrl, accountId: "demo", keyId, keySecret });
 * const prompt = await client.getPromptVersion("greeting");
 * console.log(prompt.render({ name: "Ada", product: "promptsvc" }));
 * ```
 */

export { ClientCredentialsProvider, SdkTokenProvider, TokenProvider } from "./auth.js";
export type { Clock } from "./cache.js";
export {
  type CacheInfo,
  type ClientCredentialsOptions,
  type ClientOptions,
  type GetOptions,
  type Logger,
  type OutcomeOptions,
  PromptClient,
  type PromptClientOptions,
} from "./client.js";
export {
  AuthenticationError,
  InvalidResponseError,
  NoProductionVersionError,
  NotFoundError,
  PermissionDeniedError,
  PromptServiceError,
  ServerError,
  TemplateError,
  type TemplateProblem,
  TransportError,
} from "./errors.js";
export type { FetchLike } from "./http.js";
export type { ModelConfig, ModelParams, OpenAIChatArguments, ResponseFormat, Tool } from "./model-config.js";
export { type Example, type Fallback, type FallbackContent, type Include, PromptVersion, type Rollout } from "./prompt-version.js";
export type { SnapshotStore } from "./snapshot.js";
export { assign } from "./rollout.js";
export type { ChatMessage, VariablesSchema, VariableSpec, VariableType, VariableValue } from "./template.js";
export { VERSION } from "./version.js";
