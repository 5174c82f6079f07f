/**
 * Access tokens: the SDK-token exchange (docs/api.md section 3.1) and client credentials
 * at the realm's token endpoint (section 3.2).
 *
 * A provider holds the current token and fetches a new one when none is held, when the
 * held one is due, or when the API refused it. Concurrent callers share one refresh.
 * A token obtained at time t with `expires_in` e is used until t + e - refreshBuffer (t
 * read before the request went out); the lifetime always comes from the answer: without
 * `expires_in` the token serves the call that fetched it and is replaced on every use.
 */

import type { Clock } from "./cache.js";
import { errorForAnswer, invalidResponse, isRecord, jsonOf } from "./errors.js";
import { type FetchLike, type Outgoing, RetryPolicy, requestHeaders, sendWithRetries } from "./http.js";

export abstract class TokenProvider {
  #token: string | null = null;
  #refreshAt = 0;
  #pending: Promise<string> | null = null;

  constructor(
    readonly refreshBuffer: number,
    readonly clock: Clock,
  ) {}

  /** The held token, or null when there is none or it is due for refresh. */
  current(): string | null {
    return this.#token !== null && this.clock() < this.#refreshAt ? this.#token : null;
  }

  /** A new request to the token endpoint. */
  protected abstract tokenRequest(): Outgoing;

  /**
   * A valid token: the held one unless it is due or is `stale` (the one the API just
   * refused), else a new one. Throws the mapped PromptServiceError.
   */
  token(fetcher: FetchLike, policy: RetryPolicy, deadline: number, stale: string | null = null): Promise<string> {
    const held = this.current();
    if (held !== null && held !== stale) return Promise.resolve(held);
    this.#pending ??= this.#refresh(fetcher, policy, deadline).finally(() => {
      this.#pending = null;
    });
    return this.#pending;
  }

  async #refresh(fetcher: FetchLike, policy: RetryPolicy, deadline: number): Promise<string> {
    const askedAt = this.clock();
    const answer = await sendWithRetries(fetcher, () => this.tokenRequest(), policy, deadline);
    if (answer.status !== 200) throw errorForAnswer(answer);
    const body = jsonOf(answer);
    if (!isRecord(body) || typeof body["access_token"] !== "string") {
      throw invalidResponse(answer, "token response without access_token");
    }
    const expiresIn = typeof body["expires_in"] === "number" ? body["expires_in"] : 0;
    this.#token = body["access_token"];
    this.#refreshAt = askedAt + expiresIn - this.refreshBuffer;
    return this.#token;
  }
}

/** POST {baseUrl}/v1/auth/sdk-token with the account id and API key, as JSON. */
export class SdkTokenProvider extends TokenProvider {
  readonly url: string;
  readonly #body: string;

  constructor(baseUrl: string, accountId: string, keyId: string, keySecret: string, refreshBuffer: number, clock: Clock) {
    super(refreshBuffer, clock);
    this.url = `${baseUrl.replace(/\/+$/, "")}/v1/auth/sdk-token`;
    this.#body = JSON.stringify({ account_id: accountId, key_id: keyId, key_secret: keySecret });
  }

  protected tokenRequest(): Outgoing {
    const headers = { ...requestHeaders(), "Content-Type": "application/json" };
    return { url: this.url, method: "POST", headers, body: this.#body };
  }
}

/** POST {authUrl}/realms/{org}/protocol/openid-connect/token, form-encoded. */
export class ClientCredentialsProvider extends TokenProvider {
  readonly url: string;
  readonly #form: string;

  constructor(authUrl: string, org: string, clientId: string, clientSecret: string, refreshBuffer: number, clock: Clock) {
    super(refreshBuffer, clock);
    const realm = encodeURIComponent(org);
    this.url = `${authUrl.replace(/\/+$/, "")}/realms/${realm}/protocol/openid-connect/token`;
    this.#form = new URLSearchParams({
      grant_type: "client_credentials",
      client_id: clientId,
      client_secret: clientSecret,
    }).toString();
  }

  protected tokenRequest(): Outgoing {
    const headers = { ...requestHeaders(), "Content-Type": "application/x-www-form-urlencoded" };
    return { url: this.url, method: "POST", headers, body: this.#form };
  }
}
