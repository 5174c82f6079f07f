// Cache-hit cost of PromptClient.getPromptVersion: `npm run bench` (builds first).
// Times whole batches of awaited hits (a fake fetch fills the cache once) and reports
// the per-call median, min and p95 over the batches; results go in docs/benchmarks.md.
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

async function measure(client, options) {
  await client.getPromptVersion("greeting", options);
  const perCall = [];
  for (let b = 0; b < BATCHES; b++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) await client.getPromptVersion("greeting", options);
    perCall.push(Number(process.hrtime.bigint() - start) / 1000 / BATCH);
  }
  perCall.sort((a, b) => a - b);
  const at = (q) => perCall[Math.min(perCall.length - 1, Math.floor(q * perCall.length))];
  return { median: at(0.5), min: perCall[0], p95: at(0.95) };
}

const credentials = { baseUrl: "http://bench.invalid", accountId: "a", keyId: "k", keySecret: "s" };
const plain = new PromptClient({ ...credentials, fetch: fakeFetch(version) });
const rolled = new PromptClient({ ...credentials, fetch: fakeFetch({ ...version, rollout }) });
const cases = [
  ["cache hit", plain, {}],
  ['cache hit, label: "latest"', plain, { label: "latest" }],
  ["cache hit, rolloutKey during a rollout", rolled, { rolloutKey: "user-42" }],
];
const fmt = (us) => `${us.toFixed(3)} us`;
console.log(`Command: \`cd clients/typescript && npm run bench\``);
console.log(`Run: ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${os.cpus()[0]?.model}, Node ${process.version}, ${os.platform()}`);
console.log(`Load average when the run started: ${os.loadavg()[0].toFixed(1)} (${os.cpus().length} cores)\n`);
console.log("| case | batches | median | min | p95 |\n|---|---|---|---|---|");
let hit;
for (const [name, client, options] of cases) {
  const r = await measure(client, options);
  hit ??= r.median;
  console.log(`| ${name} (batches of ${BATCH.toLocaleString("en")}) | ${BATCHES} | ${fmt(r.median)} | ${fmt(r.min)} | ${fmt(r.p95)} |`);
}
console.log(`\nTarget: cache hit under 2 us median: **${hit < 2 ? "met" : "not met"}** (${fmt(hit)}).`);
