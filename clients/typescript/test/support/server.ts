/**
 * A real `promptsvc serve` for the integration tests: memory storage, an org `acme` with
 * a key per role from a bootstrap file, on a free loopback port. The executable is
 * $PROMPTSVC_BIN, else `promptsvc` on PATH (the Python package, installed with its
 * server extra).
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const ORG = "acme";
export const KEYS = {
  read: { clientId: "ts-read", secret: "ts-read-secret-0123456789", role: "Service Read" },
  write: { clientId: "ts-write", secret: "ts-write-secret-0123456789", role: "Service Write" },
  admin: { clientId: "ts-admin", secret: "ts-admin-secret-0123456789", role: "Service Admin" },
} as const;

const START_SECONDS = 60;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

export interface ServerOptions {
  /** PROMPTSVC_TOKEN_LIFETIME, seconds (300). */
  tokenLifetime?: number;
}

export class PromptService {
  #process: ChildProcess | null = null;
  #output: string[] = [];
  #dir = mkdtempSync(join(tmpdir(), "promptsvc-ts-"));

  private constructor(readonly baseUrl: string) {}

  static async start(options: ServerOptions = {}): Promise<PromptService> {
    const port = await freePort();
    const service = new PromptService(`http://127.0.0.1:${port}`);
    await service.#launch(port, options);
    return service;
  }

  async #launch(port: number, options: ServerOptions): Promise<void> {
    const bootstrap = join(this.#dir, "bootstrap.toml");
    const keys = Object.values(KEYS).map(
      (k) => `  [[org.key]]\n  client_id = "${k.clientId}"\n  client_secret = "${k.secret}"\n  role = "${k.role}"\n`,
    );
    writeFileSync(bootstrap, `[[org]]\nslug = "${ORG}"\n${keys.join("")}`);
    const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUNBUFFERED: "1" };
    delete env["PROMPTSVC_ISSUER_URL"];
    delete env["PROMPTSVC_STORAGE_URL"];
    if (options.tokenLifetime !== undefined) env["PROMPTSVC_TOKEN_LIFETIME"] = String(options.tokenLifetime);
    const bin = process.env["PROMPTSVC_BIN"] || "promptsvc";
    const args = ["serve", "--host", "127.0.0.1", "--port", String(port), "--storage", "memory://", "--bootstrap", bootstrap];
    const child = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    this.#process = child;
    child.stdout?.on("data", (d: Buffer) => this.#output.push(d.toString()));
    child.stderr?.on("data", (d: Buffer) => this.#output.push(d.toString()));
    const spawnFailure = new Promise<never>((_, reject) =>
      child.once("error", (e) => reject(new Error(`cannot run ${bin} (set PROMPTSVC_BIN or put promptsvc on PATH): ${e.message}`))),
    );
    const deadline = Date.now() + START_SECONDS * 1000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`promptsvc serve exited (${child.exitCode}):\n${this.output}`);
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`promptsvc serve not ready in ${START_SECONDS}s:\n${this.output}`);
      }
      const ready = await Promise.race([
        fetch(`${this.baseUrl}/readyz`).then((r) => r.status === 200, () => false),
        spawnFailure,
      ]);
      if (ready) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  get output(): string {
    return this.#output.join("");
  }

  async stop(): Promise<void> {
    const child = this.#process;
    this.#process = null;
    if (child !== null && child.exitCode === null && child.pid !== undefined) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGTERM"); // its process group: the server and anything it started
      const killer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, "SIGKILL"), 10_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** The management API with the write key (or another): what the tests change. */
export class Admin {
  #token: string | null = null;

  constructor(
    readonly baseUrl: string,
    readonly key: { clientId: string; secret: string } = KEYS.admin,
  ) {}

  async #auth(): Promise<string> {
    if (this.#token === null) {
      const answer = await fetch(`${this.baseUrl}/v1/auth/sdk-token`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ account_id: ORG, key_id: this.key.clientId, key_secret: this.key.secret }),
      });
      this.#token = ((await answer.json()) as { access_token: string }).access_token;
    }
    return this.#token;
  }

  /** The call's answer; a token refused (short-lived servers) is replaced once. */
  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { Authorization: `Bearer ${await this.#auth()}` };
      const init: RequestInit = { method, headers };
      if (body !== undefined) {
        headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
      }
      const answer = await fetch(`${this.baseUrl}/api/v1${path}`, init);
      const text = await answer.text();
      if (answer.status === 401 && attempt === 0) {
        this.#token = null;
        continue;
      }
      return { status: answer.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    }
  }

  async ok(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const answer = await this.call(method, path, body);
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  }

  /** A prompt with one version per content, the first promoted; returns the versions. */
  async prompt(name: string, contents: string[], promptType = "text"): Promise<Array<Record<string, unknown>>> {
    await this.ok("POST", "/prompts", { name, prompt_type: promptType });
    const versions = [];
    for (const content of contents) versions.push(await this.ok("POST", `/prompts/${name}/versions`, { content }));
    if (versions[0] !== undefined) await this.promote(name, versions[0]["version_id"] as string);
    return versions;
  }

  promote(name: string, versionId: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return this.ok("POST", `/prompts/${name}/versions/${versionId}/promote`, extra);
  }
}
