// Cache-hit cost of PromptClient.getPromptVersion: `npm run bench` (builds first).
// Times whole batches of awaited hits (a fake fetch fills the cache once) and reports
// the per-call median, min and p95 over the batches. With --write it replaces its
// section of docs/benchmarks.md (between the bench:typescript markers).
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { PromptClient } from "../dist/index.js";

const BATCH = 2_000;
const BATCHES = 200;

const version = {
  prompt_id: "pmt_1", version_id: "v_1", name: "greeting", version: 1,
  content: "Hello {{name}}!", variables: ["name"], status: "published", is_production: true,
  prompt_type: "text", metadata: {}, tags: [], created_at: "2026-01-01T00:00:00Z",
  updated_at: "2026-01-01T00:00:00Z", promoted_at: "2026-01-01T00:00:00Z", promoted_by: "u",
};
const rollout = { rollout_id: "ro_1", percent: 30, candidate: { ...version, version_id: "v_2", version: 2 } };

function fakeFetch(body) {
  return async (url) => {
    if (url.endsWith("/v1/auth/sdk-token")) {
      return Response.json({ access_token: "t", expires_in: 3600, token_type: "Bearer" });
    }
    return Response.json(body, { headers: { ETag: '"e"' } });
  };
}

let fresh = 0; // distinct rollout keys: each call's key is one the client has not seen

async function measure(client, options) {
  await client.getPromptVersion("greeting", options({}));
  const perCall = [];
  for (let b = 0; b < BATCHES; b++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) await client.getPromptVersion("greeting", options());
    perCall.push(Number(process.hrtime.bigint() - start) / 1000 / BATCH);
  }
  perCall.sort((a, b) => a - b);
  const at = (q) => perCall[Math.min(perCall.length - 1, Math.floor(q * perCall.length))];
  return { median: at(0.5), min: perCall[0], p95: at(0.95) };
}

const credentials = { baseUrl: "http://bench.invalid", accountId: "a", keyId: "k", keySecret: "s" };
const plain = new PromptClient({ ...credentials, fetch: fakeFetch(version) });
const rolled = new PromptClient({ ...credentials, fetch: fakeFetch({ ...version, rollout }) });
const same = (options) => () => options;
const cases = [
  ["cache hit", plain, same({})],
  ['cache hit, label: "latest"', plain, same({ label: "latest" })],
  ["cache hit, rolloutKey during a rollout, a key seen before", rolled, same({ rolloutKey: "user-42" })],
  ["cache hit, rolloutKey during a rollout, a new key each call", rolled, () => ({ rolloutKey: `new-${fresh++}` })],
];
const fmt = (us) => `${us.toFixed(3)} us`;
const lines = [
  "## SDK (TypeScript, @promptsvc/client)",
  "",
  "Command: `cd clients/typescript && npm run bench`  ",
  `Run: ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${os.cpus()[0]?.model}, Node ${process.version}, ${os.platform()}`,
  "",
  `Load average when the run started: ${os.loadavg()[0].toFixed(1)} (${os.cpus().length} cores; other work shares them, so medians and p95 move between runs).`,
  "",
  "| case | batches | median | min | p95 |",
  "|---|---|---|---|---|",
];
let hit;
for (const [name, client, options] of cases) {
  const r = await measure(client, options);
  hit ??= r.median;
  lines.push(`| ${name} (batches of ${BATCH.toLocaleString("en")}) | ${BATCHES} | ${fmt(r.median)} | ${fmt(r.min)} | ${fmt(r.p95)} |`);
}
lines.push(
  "",
  `Target: cache hit under 2 us median in Node 20: **${hit < 2 ? "met" : "not met"}** (${fmt(hit)}).`,
  "",
  "Each row is the per-call time of a whole batch of `await client.getPromptVersion(...)` on a warm cache (a fake `fetch` filled it once), so it includes the promise and the await. A hit is a `Map` lookup and one clock read; with `rolloutKey` during a rollout the key's bucket (sha256 through Web Crypto) is computed once per rollout and key and then remembered (up to 10,000), so a key seen before costs a lookup more and a new key one Web Crypto digest.",
);
const section = lines.join("\n");
console.log(section);
if (process.argv.includes("--write")) {
  const path = new URL("../../../docs/benchmarks.md", import.meta.url);
  const doc = readFileSync(path, "utf-8");
  const open = "<!-- bench:typescript -->";
  const close = "<!-- /bench:typescript -->";
  const block = `${open}\n${section}\n${close}`;
  const updated = doc.includes(open)
    ? doc.slice(0, doc.indexOf(open)) + block + doc.slice(doc.indexOf(close) + close.length)
    : doc.replace("<!-- /bench:sdk -->\n", `<!-- /bench:sdk -->\n\n${block}\n`);
  writeFileSync(path, updated);
}
