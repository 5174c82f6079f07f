/** The SSE parser, and watch: true on a fake fetch (drops, reset, Last-Event-ID, backoff, 401). */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { PromptClient } from "../../src/index.js";
import { type ServerSentEvent, SseParser } from "../../src/sse.js";
import { error, eventually, FakeService, versionBody, Warnings } from "../support/fake-service.js";

function parse(...chunks: string[]): { events: ServerSentEvent[]; parser: SseParser } {
  const events: ServerSentEvent[] = [];
  const parser = new SseParser((e) => events.push(e));
  for (const chunk of chunks) parser.feed(chunk);
  return { events, parser };
}

describe("SSE parser", () => {
  test("fields, comments, multi-line data, default type", () => {
    const { events } = parse(": hello\n\nid: 1\nevent: version.promoted\ndata: {\"a\":\ndata: 1}\n\ndata:plain\n\n");
    assert.deepEqual(events, [
      { type: "version.promoted", data: '{"a":\n1}', id: "1" },
      { type: "message", data: "plain", id: "1" },
    ]);
  });

  test("CRLF, CR and LF line ends, split anywhere, and a leading BOM", () => {
    const text = "\ufeffid: 7\r\ndata: a\r\n\r\nid: 8\rdata: b\r\rdata: c\n\n";
    const whole = parse(text).events;
    assert.deepEqual(whole.map((e) => [e.id, e.data]), [["7", "a"], ["8", "b"], ["8", "c"]]);
    const bytewise = parse(...text.split("")).events;
    assert.deepEqual(bytewise, whole);
  });

  test("no data, no event; an id with NUL is ignored; retry is read", () => {
    const { events, parser } = parse("id: 3\n\nid: a\0b\nretry: 1500\nevent: x\n\ndata: d\n\n");
    assert.deepEqual(events, [{ type: "message", data: "d", id: "3" }]);
    assert.equal(parser.lastEventId, "3");
    assert.equal(parser.retry, 1500);
  });
});

function watching(service: FakeService, warnings = new Warnings()): PromptClient {
  return new PromptClient({
    baseUrl: "http://svc.test",
    accountId: "a",
    keyId: "k",
    keySecret: "s",
    fetch: service.fetch,
    watch: true,
    logger: warnings,
    retryBackoff: 0.001,
  });
}

const streamRequests = (s: FakeService) => s.requests("/api/v1/events").filter((r) => r.headers["accept"] === "text/event-stream");

describe("watch", () => {
  test("positions at the newest event, then streams with Last-Event-ID and no-store", async () => {
    const service = new FakeService();
    const client = watching(service);
    try {
      await eventually(() => client.watching);
      const [position] = service.requests("/api/v1/events?wait=0");
      assert.equal(position?.headers["accept"], "application/json");
      const [stream] = streamRequests(service);
      assert.equal(stream?.headers["last-event-id"], "5-0");
      assert.equal(stream?.headers["cache-control"], "no-store");
      assert.equal(stream?.headers["authorization"], "Bearer token-1");
      assert.equal(stream?.headers["user-agent"]?.startsWith("promptsvc-typescript/"), true);
    } finally {
      await client.close();
    }
    assert.equal(client.watching, false);
  });

  test("an event drops the named prompt's entries only; reset clears all", async () => {
    const service = new FakeService();
    service.bodies.set("greeting2/production", versionBody({ name: "greeting2", prompt_id: "pmt_2" }));
    service.bodies.set("pmt_1/latest", versionBody());
    const client = watching(service);
    try {
      await eventually(() => client.watching);
      await client.getPromptVersion("greeting");
      await client.getPromptVersion("greeting2");
      await client.getPromptVersion("pmt_1", { label: "latest" });
      const reads = () => service.requests("/api/v1/prompts/").length;
      assert.equal(reads(), 3);
      const stream = service.streams[0];
      assert.ok(stream !== undefined);
      stream.event("6-0", "version.promoted", { id: "6-0", prompt_id: "pmt_1", prompt_name: "greeting", version: 2 });
      service.bodies.set("greeting/production", versionBody({ version: 2, version_id: "v_2" }));
      await eventually(async () => (await client.getPromptVersion("greeting")).version === 2);
      assert.equal(reads(), 4);
      await client.getPromptVersion("greeting2");
      await client.getPromptVersion("pmt_1", { label: "latest" });
      assert.equal(reads(), 5, "greeting2 kept its entry; the pmt_ id entry went");
      stream.event("7-0", "reset", { last_id: "7-0" });
      await new Promise((r) => setTimeout(r, 20));
      await client.getPromptVersion("greeting2");
      assert.equal(reads(), 6);
    } finally {
      await client.close();
    }
  });

  test("a stream that ends is resumed after the last event's id", async () => {
    const service = new FakeService();
    const client = watching(service);
    try {
      await eventually(() => client.watching);
      const first = service.streams[0];
      first?.event("9-1", "prompt.created", { prompt_name: "new", prompt_id: "pmt_9" });
      first?.write(": keep-alive\n\n");
      await new Promise((r) => setTimeout(r, 10));
      first?.end();
      await eventually(() => streamRequests(service).length === 2);
      assert.equal(streamRequests(service)[1]?.headers["last-event-id"], "9-1");
      assert.equal(service.requests("?wait=0").length, 1, "positioned once");
    } finally {
      await client.close();
    }
  });

  test("a refused token is refreshed and tried again at once; other refusals back off", async () => {
    const service = new FakeService();
    const warnings = new Warnings();
    service.script("/api/v1/events", () => Response.json({ items: [], last_id: "1-0", reset: false }));
    service.script("/api/v1/events", () => error(401, "unauthorized", "unauthorized"));
    service.script("/api/v1/events", () => error(503, "service_unavailable", "too many streams", { "Retry-After": "0" }));
    const client = watching(service, warnings);
    try {
      await eventually(() => client.watching, 3);
      const streams = streamRequests(service);
      assert.equal(streams.length, 3);
      assert.equal(streams[0]?.headers["authorization"], "Bearer token-1");
      assert.equal(streams[1]?.headers["authorization"], "Bearer token-2", "a fresh token after the 401");
      assert.match(warnings.messages.join("\n"), /too many streams/);
    } finally {
      await client.close();
    }
  });

  test("failed attempts back off exponentially with jitter; Retry-After is honoured", async () => {
    const service = new FakeService();
    // The first of these answers the position request; then three 500s, then a 503.
    for (let i = 0; i < 4; i++) service.script("/api/v1/events", (seen) => (seen.path.includes("wait=") ? Response.json({ last_id: "1-0" }) : error(500, "internal_server_error", "boom")));
    service.script("/api/v1/events", (seen) => (seen.path.includes("wait=") ? Response.json({ last_id: "1-0" }) : error(503, "service_unavailable", "full", { "Retry-After": "1" })));
    const client = watching(service);
    try {
      await eventually(() => client.watching, 5);
      const times = streamRequests(service).map((s) => s.at);
      const gaps = times.slice(1).map((t, i) => (t - (times[i] as number)) / 1000);
      assert.equal(gaps.length, 4);
      const [g0, g1, g2, g3] = gaps as [number, number, number, number];
      assert.ok(g0 >= 0.045 && g0 < 0.5, `first wait about 0.05-0.1 s: ${g0}`);
      assert.ok(g1 >= 0.095, `second about 0.1-0.2 s: ${g1}`);
      assert.ok(g2 >= 0.195 && g2 > g0, `third about 0.2-0.4 s: ${g2}`);
      assert.ok(g3 >= 0.99, `Retry-After: 1 waits a second: ${g3}`);
    } finally {
      await client.close();
    }
  });

  test("close() ends a stream that is waiting for data", async () => {
    const service = new FakeService();
    const client = watching(service);
    await eventually(() => client.watching);
    const started = performance.now();
    await client.close();
    assert.ok(performance.now() - started < 500);
    assert.equal(client.watching, false);
  });
});
