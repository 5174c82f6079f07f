/** Rollout assignment: the vectors every SDK shares, and picking from the cached entry. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { assign, PromptClient } from "../../src/index.js";
import { bucket } from "../../src/rollout.js";
import { FakeClock, FakeService, versionBody } from "../support/fake-service.js";

interface Case {
  rollout_id: string;
  key: string;
  percent: number;
  bucket: number;
  candidate: boolean;
}
interface Sweep {
  rollout_id: string;
  key: string;
  candidate_from: number | null;
  candidate: boolean[];
}

// Written by tests/vectors/make_rollout_vectors.py (hashlib alone) at the repository root.
const VECTORS = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/rollout.json", import.meta.url), "utf-8")) as {
  cases: Case[];
  sweeps: Sweep[];
};

describe("shared vectors", () => {
  test("every case: same bucket, same side", async () => {
    assert.ok(VECTORS.cases.length >= 2000);
    const wrong: Case[] = [];
    for (const c of VECTORS.cases) {
      if ((await bucket(c.rollout_id, c.key)) !== c.bucket || (await assign(c.rollout_id, c.key, c.percent)) !== c.candidate) wrong.push(c);
    }
    assert.deepEqual(wrong, []);
  });

  test("raising the percent only moves keys to the candidate", async () => {
    for (const s of VECTORS.sweeps) {
      const got: boolean[] = [];
      for (let p = 1; p < 100; p++) got.push(await assign(s.rollout_id, s.key, p));
      assert.deepEqual(got, s.candidate);
      assert.deepEqual(got, got.map((_, i) => s.candidate_from !== null && i + 1 >= s.candidate_from));
    }
  });
});

describe("getPromptVersion with rolloutKey", () => {
  const rolloutId = "ro_5feceb66ffc86f38d952";
  const cases = VECTORS.cases.filter((c) => c.rollout_id === rolloutId && c.percent === 50);

  function setup(percent: number) {
    const service = new FakeService();
    const clock = new FakeClock();
    const candidate = versionBody({ version: 2, version_id: "v_2", status: "draft", is_production: false });
    service.bodies.set("greeting/production", versionBody({ rollout: { rollout_id: rolloutId, percent, candidate } }));
    const client = new PromptClient({ baseUrl: "http://svc.test", accountId: "a", keyId: "k", keySecret: "s", fetch: service.fetch, clock: clock.read, cacheTtl: 60 });
    return { service, clock, client };
  }

  test("each key gets its side from the cached entry: one request for every key", async () => {
    const { service, client } = setup(50);
    assert.ok(cases.some((c) => c.candidate) && cases.some((c) => !c.candidate));
    for (const c of cases) {
      const got = await client.getPromptVersion("greeting", { rolloutKey: c.key });
      assert.equal(got.version, c.candidate ? 2 : 1, c.key);
      assert.equal(got.rollout?.rollout_id, rolloutId);
      assert.equal(await client.getPromptVersion("greeting", { rolloutKey: c.key }), got, "sticky");
    }
    assert.equal(service.requests("/prompts/").length, 1);
  });

  test("without a key the baseline is served, with the rollout field", async () => {
    const { client } = setup(99);
    const v = await client.getPromptVersion("greeting");
    assert.equal(v.version, 1);
    assert.equal(v.rollout?.percent, 99);
    assert.equal(v.rollout?.candidate.version, 2);
    assert.equal(v.rollout?.candidate.rollout, v.rollout);
    // An empty key is a caller without one, as the service's ?rollout_key= treats it.
    assert.equal(await client.getPromptVersion("greeting", { rolloutKey: "" }), v);
  });

  test("a new percent, once fetched, moves keys only towards the candidate", async () => {
    const { service, clock, client } = setup(10);
    const before = new Map<string, number>();
    for (const c of cases) before.set(c.key, (await client.getPromptVersion("greeting", { rolloutKey: c.key })).version);
    const candidate = versionBody({ version: 2, version_id: "v_2", status: "draft", is_production: false });
    service.bodies.set("greeting/production", versionBody({ rollout: { rollout_id: rolloutId, percent: 50, candidate } }));
    clock.advance(60);
    for (const c of cases) {
      const now = (await client.getPromptVersion("greeting", { rolloutKey: c.key })).version;
      assert.equal(now, c.candidate ? 2 : 1);
      if (before.get(c.key) === 2) assert.equal(now, 2);
    }
  });

  test("a read without a rollout ignores the key", async () => {
    const service = new FakeService();
    const client = new PromptClient({ baseUrl: "http://svc.test", accountId: "a", keyId: "k", keySecret: "s", fetch: service.fetch });
    assert.equal((await client.getPromptVersion("greeting", { rolloutKey: "u" })).version, 1);
  });
});
