// Uses the public API as an application would; the @ts-expect-error lines prove the
// declarations refuse what the SDK refuses. Run after compiling: prints one JSON line.
import {
  type ChatMessage,
  type FetchLike,
  type GetOptions,
  NotFoundError,
  PromptClient,
  PromptServiceError,
  type PromptVersion,
  TemplateError,
} from "@promptsvc/client";

const body = {
  prompt_id: "pmt_1", version_id: "v_1", name: "greeting", version: 1,
  content: "Hello {{name}}", variables: ["name"], status: "published", is_production: true,
  prompt_type: "text", metadata: {}, tags: [], created_at: "2026-01-01T00:00:00Z",
  updated_at: "2026-01-01T00:00:00Z", promoted_at: null, promoted_by: null,
};

const fakeFetch: FetchLike = async (url) =>
  url.endsWith("/sdk-token")
    ? Response.json({ access_token: "t", expires_in: 300, token_type: "Bearer" })
    : Response.json(body);

const client = new PromptClient({ baseUrl: "http://svc.invalid", accountId: "demo", keyId: "k", keySecret: "s", cacheTtl: 60, fetch: fakeFetch });
const options: GetOptions = { label: "latest", rolloutKey: "user-1" };
const version: PromptVersion = await client.getPromptVersion("greeting", { label: "production" });
const id: string = version.version_id;
const production: boolean = version.is_production;
const fallback: boolean = version.is_fallback;
const schemaType = version.variables_schema["name"]?.type;
const rendered: string | ChatMessage[] = version.render({ name: "Ada" });

// Compiled, never run: each line must be a type error.
export function refused(): void {
  // @ts-expect-error version is a string or a number
  void client.getPromptVersion("greeting", { version: true });
  // @ts-expect-error the API's field names, not camelCase
  void version.versionId;
  // @ts-expect-error versions are read-only
  version.content = "changed";
  // @ts-expect-error unknown option
  void new PromptClient({ baseUrl: "x", accountId: "a", keyId: "k", keySecret: "s", cache_ttl: 5 });
}

try {
  await client.getPromptVersion("greeting", { label: "latest", version: "v_1" });
} catch (error) {
  if (!(error instanceof TypeError)) throw error;
}
const isServiceError = new NotFoundError("x", { status: 404 }) instanceof PromptServiceError;
let problems = 0;
try {
  version.render({});
} catch (error) {
  if (error instanceof TemplateError) problems = error.problems.length;
}
await client.close();
console.log(JSON.stringify({ id, production, fallback, schemaType, rendered, isServiceError, problems, label: options.label }));
