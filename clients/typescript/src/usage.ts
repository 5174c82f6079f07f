/**
 * Usage counting (docs/usage.md): renders and outcomes per key, kept in memory and sent
 * in batches to `POST /api/v1/usage`.
 *
 * A key is (prompt_id, version, environment, rollout_id, arm). The client that fetched a
 * version tags it (`tagVersion`) with its key's tally, so a render costs one `renders++`
 * on an object it already holds. What a send does not deliver is given back and sent
 * with the next; at most `MAX_KEYS` keys are kept, the oldest going first, with a warning.
 */

import { type SpanAttributes, spanAttributes } from "./tracing.js";

export const USAGE_PATH = "/api/v1/usage";
/** Keys kept while sends fail; beyond this the oldest go. */
export const MAX_KEYS = 10_000;
/** Items in one POST (the service takes no more). */
export const MAX_ITEMS = 500;

export interface UsageKey {
  readonly prompt_id: string;
  readonly version: number;
  readonly environment: string | null;
  readonly rollout_id: string | null;
  readonly arm: "baseline" | "candidate" | null;
}

/** What one key counted since it was last taken. */
export class Tally {
  renders = 0;
  ok = 0;
  errors = 0;
  score_sum = 0;
  score_count = 0;

  add(other: Tally): void {
    this.renders += other.renders;
    this.ok += other.ok;
    this.errors += other.errors;
    this.score_sum += other.score_sum;
    this.score_count += other.score_count;
  }

  get empty(): boolean {
    return this.renders === 0 && this.ok === 0 && this.errors === 0 && this.score_count === 0;
  }
}

/** One key's counts: what `POST /api/v1/usage` takes as an item. */
export interface Counted {
  readonly key: UsageKey;
  readonly tally: Tally;
}

export type UsageItem = UsageKey & Omit<Tally, "add" | "empty">;

/** What a tagged version carries: its key, the tally its renders go to (null: not
 * counted) and its span attributes (null: no OpenTelemetry). */
export interface VersionUsage {
  readonly key: UsageKey;
  readonly id: string;
  readonly tally: Tally | null;
  readonly attributes: SpanAttributes | null;
}

const idOf = (key: UsageKey): string =>
  JSON.stringify([key.prompt_id, key.version, key.environment, key.rollout_id, key.arm]);

/** One client's counts: the live tallies versions count into, and what earlier sends
 * did not deliver (oldest first). */
export class UsageCounter {
  readonly #live = new Map<string, Counted>();
  #kept = new Map<string, Counted>();

  constructor(
    readonly maxKeys = MAX_KEYS,
    readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** The live tally of `key`, shared by every version with that key. */
  tally(key: UsageKey): Tally {
    const id = idOf(key);
    let counted = this.#live.get(id);
    if (counted === undefined) {
      counted = { key, tally: new Tally() };
      this.#live.set(id, counted);
    }
    return counted.tally;
  }

  /** Count one outcome of `key`: ok or an error, and its score when given. */
  record(key: UsageKey, ok: boolean, score: number | null): void {
    const tally = this.tally(key);
    if (ok) tally.ok += 1;
    else tally.errors += 1;
    if (score !== null) {
      tally.score_sum += score;
      tally.score_count += 1;
    }
  }

  /** Everything counted and not delivered, oldest first; the caller sends it and gives
   * back what it could not deliver. The live tallies start again from zero. */
  take(): Map<string, Counted> {
    const taken = this.#kept;
    this.#kept = new Map();
    for (const [id, { key, tally }] of this.#live) {
      if (tally.empty) continue;
      const copy = new Tally();
      copy.add(tally);
      Object.assign(tally, { renders: 0, ok: 0, errors: 0, score_sum: 0, score_count: 0 });
      const kept = taken.get(id);
      if (kept === undefined) taken.set(id, { key, tally: copy });
      else kept.tally.add(copy);
    }
    return this.#bounded(taken);
  }

  /** Keep `unsent` for the next send, ahead of what was kept since (older). */
  giveBack(unsent: Map<string, Counted>): void {
    if (unsent.size === 0) return;
    const merged = new Map(unsent);
    for (const [id, counted] of this.#kept) {
      const older = merged.get(id);
      if (older === undefined) merged.set(id, counted);
      else older.tally.add(counted.tally);
    }
    this.#kept = this.#bounded(merged);
  }

  #bounded(counts: Map<string, Counted>): Map<string, Counted> {
    const excess = counts.size - this.maxKeys;
    if (excess <= 0) return counts;
    this.warn(`promptsvc: usage: ${counts.size} keys are waiting to be sent, more than ${this.maxKeys}: dropping the ${excess} oldest`);
    return new Map([...counts].slice(excess));
  }
}

/** The `POST /api/v1/usage` item of one key. */
export function itemOf({ key, tally }: Counted): UsageItem {
  const { renders, ok, errors, score_sum, score_count } = tally;
  return { ...key, renders, ok, errors, score_sum, score_count };
}

/** The environment an SDK read path names (`/api/v1/prompts/{name}/...`): `production`,
 * the name after `environments/`, or null (`latest`, a version). */
export function readEnvironment(path: string): string | null {
  const rest = path.split("?")[0]!.split("/").slice(5);
  if (rest.length === 1 && rest[0] === "production") return "production";
  if (rest.length === 2 && rest[0] === "environments") return decodeURIComponent(rest[1]!);
  return null;
}

/** The usage of each side of a version read in `environment` (the baseline and the
 * candidate during a rollout), counted in `counter` (null: not counted). */
export function usageOf(
  side: { prompt_id: string; version: number; name: string; version_id: string },
  environment: string | null,
  rolloutId: string | null,
  arm: "baseline" | "candidate" | null,
  counter: UsageCounter | null,
): VersionUsage {
  const key: UsageKey = { prompt_id: side.prompt_id, version: side.version, environment, rollout_id: rolloutId, arm };
  return {
    key,
    id: idOf(key),
    tally: counter === null ? null : counter.tally(key),
    attributes: spanAttributes(side.name, side.version, side.version_id, environment, rolloutId, arm),
  };
}
