/**
 * A Server-Sent Events parser as the WHATWG HTML standard describes it ("Interpreting an
 * event stream"): lines end in CRLF, LF or CR; `:` starts a comment; `data` lines join
 * with "\n"; an `id` persists to later events (one containing NUL is ignored); a blank
 * line dispatches, unless no data came. Small enough that a dependency would not earn
 * its place.
 */

export interface ServerSentEvent {
  /** The `event` field, "message" when absent. */
  type: string;
  data: string;
  /** The last event id seen so far (the stream's, not only this event's). */
  id: string;
}

export class SseParser {
  #buffer = "";
  #started = false;
  #data: string[] = [];
  #type = "";
  #lastId = "";
  /** The stream's `retry` field in milliseconds, when it sent one. */
  retry: number | null = null;

  constructor(private readonly onEvent: (event: ServerSentEvent) => void) {}

  get lastEventId(): string {
    return this.#lastId;
  }

  /** Feed decoded text; complete lines are processed, the rest kept for the next chunk. */
  feed(chunk: string): void {
    let text = this.#buffer + chunk;
    if (!this.#started && text.length > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      if (c === 13 && i + 1 === text.length) break; // a CR at the end may be half of CRLF
      this.#line(text.slice(start, i));
      if (c === 13 && text.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
    }
    this.#buffer = text.slice(start);
  }

  #line(line: string): void {
    if (line === "") return this.#dispatch();
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") this.#type = value;
    else if (name === "data") this.#data.push(value);
    else if (name === "id" && !value.includes("\0")) this.#lastId = value;
    else if (name === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
  }

  #dispatch(): void {
    const data = this.#data;
    const type = this.#type;
    this.#data = [];
    this.#type = "";
    if (data.length === 0) return;
    this.onEvent({ type: type || "message", data: data.join("\n"), id: this.#lastId });
  }
}
