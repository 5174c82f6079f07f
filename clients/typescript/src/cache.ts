/**
 * The SDK's cache of resolved prompt versions (docs/api.md section 13).
 *
 * Keys are `prompt:<name>:<label or version>`; a call with neither uses `production`.
 * Each entry keeps its expiry and the answer's ETag, so an expired entry can be
 * revalidated with If-None-Match and still be served while the service is down.
 *
 * Each key is also filed under the prompt reference it was asked with (a name or a `pmt_`
 * id), so `drop` forgets exactly one prompt's entries (a change event names both); never
 * by key prefix, which would take `greeting2` along with `greeting`. It is filed under
 * every prompt its version includes too (docs/composition.md): a change of an included
 * prompt drops the entries that splice it in, without asking the service.
 *
 * A fetch reads `generation` before it starts and hands it to `put`: a `clear()` or a
 * `drop` of its prompt in between wins, so a fetch begun before a change never refills
 * the cache with what it read before it.
 */

import type { PromptVersion } from "./prompt-version.js";

export const LABELS = new Set(["production", "latest"]);

/** How many recent drops a put is checked against; a fetch older than them is not stored. */
const DROPS_KEPT = 256;

export type Clock = () => number;

/** The cache key of a call; TypeError when both label and version are given. */
export function cacheKey(name: string, label: string | undefined, version: string | number | undefined): string {
  if (version === undefined) return `prompt:${name}:${label ?? "production"}`;
  if (label !== undefined) throw new TypeError("pass either label or version, not both");
  if (LABELS.has(String(version))) throw new TypeError(`'${version}' is a label: pass { label: '${version}' }`);
  return `prompt:${name}:${version}`;
}

export interface CacheEntry {
  readonly version: PromptVersion;
  readonly etag: string | null;
  /** On the cache's clock, seconds. */
  readonly expiresAt: number;
}

/** The references an entry is filed under: the prompt asked for, and every prompt its
 * version (or the rollout candidate it carries) includes. */
function filedUnder(prompt: string, version: PromptVersion): string[] {
  const candidate = version.rollout?.candidate;
  return [...new Set([prompt, ...version.included_prompts, ...(candidate?.included_prompts ?? [])])];
}

/** A TTL cache; `ttl` <= 0 stores nothing. `clock` (seconds) is the seam tests move. */
export class PromptCache {
  #entries = new Map<string, CacheEntry>();
  #keys = new Map<string, Set<string>>(); // prompt reference -> its keys
  #generation = 0; // moved by every clear() and drop()
  #cleared = 0; // the generation the last clear() made
  #drops: Array<[number, ReadonlySet<string>]> = [];

  constructor(
    readonly ttl: number,
    readonly clock: Clock,
  ) {}

  /** The entry if present and unexpired: the hot path. */
  fresh(key: string): CacheEntry | undefined {
    const entry = this.#entries.get(key);
    return entry !== undefined && entry.expiresAt > this.clock() ? entry : undefined;
  }

  /** The entry, expired or not (for revalidation and stale-if-error). */
  get(key: string): CacheEntry | undefined {
    return this.#entries.get(key);
  }

  get generation(): number {
    return this.#generation;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Store (or renew) `key` for `ttl` seconds, filed under `prompt`, unless a clear or a
   * drop of `prompt` came after `generation`. Returns the entry either way. */
  put(key: string, prompt: string, version: PromptVersion, etag: string | null, generation: number): CacheEntry {
    const entry: CacheEntry = Object.freeze({ version, etag, expiresAt: this.clock() + this.ttl });
    const refs = filedUnder(prompt, version);
    if (this.ttl > 0 && (generation === this.#generation || refs.every((ref) => this.#untouched(ref, generation)))) {
      this.#file(key, refs, entry);
    }
    return entry;
  }

  #file(key: string, refs: readonly string[], entry: CacheEntry): void {
    this.#entries.set(key, entry);
    for (const ref of refs) {
      let keys = this.#keys.get(ref);
      if (keys === undefined) this.#keys.set(ref, (keys = new Set()));
      keys.add(key);
    }
  }

  /** Store a version the service has not confirmed (from the snapshot, or served stale
   * again) for `ttl` seconds, without an ETag: once expired, the next call asks the service. */
  putStale(key: string, prompt: string, version: PromptVersion, ttl: number): void {
    if (this.ttl <= 0) return;
    this.#file(key, filedUnder(prompt, version), Object.freeze({ version, etag: null, expiresAt: this.clock() + ttl }));
  }

  #untouched(prompt: string, generation: number): boolean {
    if (generation < this.#cleared) return false;
    const oldest = this.#drops[0];
    if (oldest === undefined || oldest[0] > generation + 1) return false;
    return !this.#drops.some(([gen, refs]) => gen > generation && refs.has(prompt));
  }

  /** Forget every entry filed under any of `prompts` (names or `pmt_` ids). */
  drop(prompts: Iterable<string>): void {
    const refs = new Set(prompts);
    this.#generation += 1;
    this.#drops.push([this.#generation, refs]);
    if (this.#drops.length > DROPS_KEPT) this.#drops.shift();
    for (const ref of refs) {
      for (const key of this.#keys.get(ref) ?? []) this.#entries.delete(key);
      this.#keys.delete(ref);
    }
  }

  /** Drop every entry. */
  clear(): void {
    this.#generation += 1;
    this.#cleared = this.#generation;
    this.#drops = [];
    this.#entries = new Map();
    this.#keys = new Map();
  }
}
