/** A `snapshotStore` in one file, replaced atomically (Node.js only). */

import { randomUUID } from "node:crypto";
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

import type { SnapshotStore } from "../snapshot.js";

/**
 * Keeps the snapshot at `path`: `save` writes a temporary file beside it, flushes it to
 * disk and renames it over `path`, so a reader finds the old text or the new one, never
 * half of one; `load` gives null when there is no file yet.
 */
export class FileSnapshotStore implements SnapshotStore {
  constructor(readonly path: string) {}

  async load(): Promise<string | null> {
    try {
      return await readFile(this.path, "utf-8");
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return null;
      throw error;
    }
  }

  async save(text: string): Promise<void> {
    const directory = dirname(this.path);
    await mkdir(directory, { recursive: true });
    const temporary = join(directory, `.${basename(this.path)}.${randomUUID()}.tmp`);
    try {
      const file = await open(temporary, "w");
      try {
        await file.writeFile(text, "utf-8");
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temporary, this.path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }
}
