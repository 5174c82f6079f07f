/**
 * `snapshotStore`: the cache kept outside the process, so an application can start while
 * the service cannot be reached (docs/offline.md).
 *
 * The snapshot is one JSON text, `{"format": 1, "event_id", "entries": {cache key:
 * {"prompt", "path", "version"}}}`, `version` being the service's answer as it came. The
 * client saves it whole after each change (a store replaces what it held atomically:
 * `FileSnapshotStore` from `@promptsvc/client/node` writes a temporary file and renames
 * it). A text that cannot be parsed whole (cut short, another format) is ignored with a
 * warning, never thrown.
 */

import { isRecord } from "./errors.js";
import { PromptVersion } from "./prompt-version.js";

/** Where the snapshot lives: any store that gives back the last text it was given. */
export interface SnapshotStore {
  /** The text last saved, or null when there is none. */
  load(): Promise<string | null> | string | null;
  /** Keep `text` in place of what was saved before. */
  save(text: string): Promise<void> | void;
}

export const SNAPSHOT_FORMAT = 1;

export interface SnapshotItem {
  readonly prompt: string;
  readonly path: string;
  readonly version: unknown;
}

export interface SnapshotEntry extends SnapshotItem {
  readonly key: string;
  /** Built from `version`, marked `is_stale`. */
  readonly stale: PromptVersion;
}

export interface Snapshot {
  readonly eventId: string | null;
  readonly entries: SnapshotEntry[];
  readonly items: Map<string, SnapshotItem>;
}

/** The snapshot in `text`; throws (any error) when it is not a whole snapshot. */
export function parseSnapshot(text: string): Snapshot {
  const body: unknown = JSON.parse(text);
  if (!isRecord(body) || body["format"] !== SNAPSHOT_FORMAT) throw new Error(`format is not ${SNAPSHOT_FORMAT}`);
  const eventId = body["event_id"] ?? null;
  if (eventId !== null && typeof eventId !== "string") throw new Error("event_id is not a string");
  const raw = body["entries"];
  if (!isRecord(raw)) throw new Error("entries is not an object");
  const entries: SnapshotEntry[] = [];
  const items = new Map<string, SnapshotItem>();
  for (const [key, item] of Object.entries(raw)) {
    if (!isRecord(item) || typeof item["prompt"] !== "string" || typeof item["path"] !== "string") {
      throw new Error(`entry '${key}' is incomplete`);
    }
    const kept: SnapshotItem = { prompt: item["prompt"], path: item["path"], version: item["version"] };
    entries.push({ key, ...kept, stale: PromptVersion.fromJson(item["version"], true) });
    items.set(key, kept);
  }
  return { eventId, entries, items };
}

export function snapshotText(eventId: string | null, items: ReadonlyMap<string, SnapshotItem>): string {
  return JSON.stringify({ format: SNAPSHOT_FORMAT, event_id: eventId, entries: Object.fromEntries(items) });
}
