/** The package as published: its version, and a library that needs nothing Node-only. */

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { VERSION } from "../../src/index.js";

const root = new URL("../../../", import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), "utf-8");

test("VERSION (sent in User-Agent) is package.json's version", () => {
  assert.equal(VERSION, (JSON.parse(read("package.json")) as { version: string }).version);
});

test("the library compiles without Node's types and imports no Node module", () => {
  const config = JSON.parse(read("tsconfig.json").replace(/^\s*\/\/.*$/gm, "")) as { compilerOptions: { types: string[]; lib: string[] } };
  assert.deepEqual(config.compilerOptions.types, []);
  assert.ok(!config.compilerOptions.lib.some((lib) => lib.toLowerCase().includes("node")));
  const sources = readdirSync(new URL("src/", root)).filter((f) => f.endsWith(".ts"));
  assert.ok(sources.length > 5);
  for (const file of sources) {
    const text = read(`src/${file}`);
    assert.doesNotMatch(text, /from\s+["'](node:|fs|path|http|https|crypto|events|stream|buffer)["']/, file);
    assert.doesNotMatch(text, /\b(Buffer|require|__dirname)\b/, file);
  }
});

test("no runtime dependencies", () => {
  const pkg = JSON.parse(read("package.json")) as Record<string, unknown>;
  assert.equal(pkg["dependencies"], undefined);
  assert.equal(pkg["type"], "module");
});
