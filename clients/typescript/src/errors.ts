/**
 * Errors the SDK throws, and the one place an HTTP answer becomes one of them.
 *
 * ```text
 * PromptServiceError              every service error; .status .code .message .requestId
 * ├── AuthenticationError         401: bad credentials, or a token the API refused twice
 * ├── PermissionDeniedError       403: the key's role does not allow the call
 * ├── NotFoundError               404: no such prompt, version or environment
 * │   └── NoProductionVersionError  404: the prompt has no production version
 * ├── ServerError                 5xx (after retries)
 * ├── TransportError              no answer: refused, reset, timed out, time budget spent
 * └── InvalidResponseError        an answer that is not what the API promises
 * TemplateError                   render(): every problem with the values, at once
 * ```
 *
 * Any other status (400, 409, 429, ...) throws `PromptServiceError` itself. `code` and
 * `message` come from the error body `{code, message, error}` when there is one, else
 * `code` is `http_<status>`. `requestId` is the answer's `X-Request-ID`, or the one the
 * SDK sent. Bad arguments (both `label` and `version`, say) throw a `TypeError`.
 */

export interface ErrorDetails {
  status?: number | null;
  code?: string;
  requestId?: string | null;
  cause?: unknown;
}

/** Root of every error the service (or its absence) causes. */
export class PromptServiceError extends Error {
  override name = "PromptServiceError";
  /** HTTP status, or null when no answer came. */
  readonly status: number | null;
  /** Machine-readable code: the body's `code`, `http_<status>`, `transport` or `timeout`. */
  readonly code: string;
  /** The request's X-Request-ID: quote it when asking the service's operators. */
  readonly requestId: string | null;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status ?? null;
    this.code = details.code ?? "error";
    this.requestId = details.requestId ?? null;
  }
}

/** 401: wrong or revoked key, or a token the API would not accept after a refresh. */
export class AuthenticationError extends PromptServiceError {
  override name = "AuthenticationError";
}

/** 403: the token is valid but its key lacks the role the call needs. */
export class PermissionDeniedError extends PromptServiceError {
  override name = "PermissionDeniedError";
}

/** 404: the prompt, version or environment does not exist (or belongs to another org). */
export class NotFoundError extends PromptServiceError {
  override name = "NotFoundError";
}

/**
 * 404 on a production read of a prompt that has no production version (a prompt that
 * does not exist is a plain NotFoundError).
 */
export class NoProductionVersionError extends NotFoundError {
  override name = "NoProductionVersionError";
}

/** 5xx: the service failed; thrown once retries are used up. */
export class ServerError extends PromptServiceError {
  override name = "ServerError";
}

/** No answer at all: connection refused or reset, timeout, or the time budget is spent. */
export class TransportError extends PromptServiceError {
  override name = "TransportError";
}

/** A success status whose body is not what the API promises (not JSON, a field missing). */
export class InvalidResponseError extends PromptServiceError {
  override name = "InvalidResponseError";
}

/** One thing wrong with the values given to `render()`. */
export interface TemplateProblem {
  variable: string;
  problem: string;
}

/**
 * `render()` could not fill the template: `problems` lists every variable that is
 * missing or has a value its schema refuses (not just the first), as does the message.
 * Also thrown for chat content that is not a list of `{role, content}` messages
 * (`problems` is then empty).
 */
export class TemplateError extends Error {
  override name = "TemplateError";
  readonly problems: readonly TemplateProblem[];

  constructor(message: string, problems: readonly TemplateProblem[] = []) {
    super(message);
    this.problems = problems;
  }
}

const BY_STATUS: Record<number, typeof PromptServiceError> = {
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
};

/** What the SDK keeps of an HTTP answer: the body is read whole before mapping. */
export interface Answer {
  status: number;
  statusText: string;
  headers: Headers;
  body: string;
  /** The X-Request-ID the SDK sent. */
  sentRequestId: string;
}

export function requestIdOf(answer: Answer): string {
  return answer.headers.get("X-Request-ID") || answer.sentRequestId;
}

/** The decoded JSON body, or undefined when it is not JSON. */
export function jsonOf(answer: Answer): unknown {
  try {
    return JSON.parse(answer.body) as unknown;
  } catch {
    return undefined;
  }
}

/** The 404's `reason` for a prompt without a production version (docs/api.md section 9). */
export const NO_PRODUCTION_VERSION = "no_production_version";

/** The error for a non-success answer; `production` marks a production read. */
export function errorForAnswer(answer: Answer, production = false): PromptServiceError {
  const { status } = answer;
  let code = `http_${status}`;
  let message = answer.statusText || `HTTP ${status}`;
  const body = jsonOf(answer);
  if (isRecord(body)) {
    if (typeof body["code"] === "string") code = body["code"];
    else if (typeof body["error"] === "string") code = body["error"]; // plain RFC 6749 error
    if (typeof body["message"] === "string") message = body["message"];
  }
  let cls: typeof PromptServiceError;
  // Only a prompt that exists without a production version; a missing one is NotFound.
  const reason = isRecord(body) ? body["reason"] : undefined;
  if (status === 404 && production && reason === NO_PRODUCTION_VERSION) cls = NoProductionVersionError;
  else if (status >= 500) cls = ServerError;
  else cls = BY_STATUS[status] ?? PromptServiceError;
  return new cls(message, { status, code, requestId: requestIdOf(answer) });
}

/** A success status whose body the SDK cannot use. */
export function invalidResponse(answer: Answer, what: string): InvalidResponseError {
  return new InvalidResponseError(`unexpected response body: ${what}`, {
    status: answer.status,
    code: "invalid_response",
    requestId: requestIdOf(answer),
  });
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
