/**
 * The package as a consumer gets it: `npm pack`, installed into a tiny project
 * (test/consumer), compiled against the declarations under NodeNext and Bundler
 * resolution with no Node types, then run.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "promptsvc-consumer-"));
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const run = (cmd: string, args: string[], cwd: string): string =>
  execFileSync(cmd, args, { cwd, encoding: "utf-8", stdio: ["ignore", "pipe", "pipe"] });

after(() => rmSync(work, { recursive: true, force: true }));

test("the packed package installs, type-checks in a consumer project, and runs", () => {
  run("npm", ["pack", "--ignore-scripts", "--pack-destination", work], root);
  const [tarball] = readdirSync(work).filter((f) => f.endsWith(".tgz"));
  assert.ok(tarball !== undefined);
  const listing = run("tar", ["-tzf", join(work, tarball)], work).split("\n");
  assert.ok(listing.includes("package/dist/index.d.ts") && listing.includes("package/dist/index.js"));
  assert.ok(listing.includes("package/dist/node/index.d.ts") && listing.includes("package/dist/node/index.js"));
  assert.ok(!listing.some((f) => f.startsWith("package/test/") || f.startsWith("package/node_modules/")));

  const project = join(work, "consumer");
  cpSync(join(root, "test", "consumer"), project, { recursive: true });
  run("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--offline", join(work, tarball)], project);
  run(process.execPath, [tsc, "-p", "tsconfig.json"], project);
  run(process.execPath, [tsc, "-p", "tsconfig.bundler.json"], project);
  const printed = JSON.parse(run(process.execPath, [join(project, "out", "index.js")], project)) as Record<string, unknown>;
  assert.deepEqual(printed, {
    id: "v_1",
    production: true,
    fallback: false,
    schemaType: "string",
    rendered: "Hello Ada",
    isServiceError: true,
    problems: 1,
    label: "latest",
  });
});
