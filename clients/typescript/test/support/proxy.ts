/**
 * A recording HTTP proxy in front of the real server: it shows what the SDK sent and
 * what the server answered, and stands in for the failures a deployment has (a gateway's
 * 502 while the service is down, a refused connection, a dropped stream) on demand.
 */

import { createServer, type IncomingHttpHeaders, request, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

import { freePort } from "./server.js";

export interface Exchange {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  status: number;
  responseHeaders: IncomingHttpHeaders;
}

export type Mode = "pass" | "gateway-error" | "refuse";

export class Proxy {
  readonly exchanges: Exchange[] = [];
  mode: Mode = "pass";
  #sockets = new Set<Socket>();
  #streams = new Set<ServerResponse>();

  private constructor(
    readonly upstream: string,
    readonly baseUrl: string,
    private readonly server: Server,
  ) {}

  static async start(upstream: string): Promise<Proxy> {
    const port = await freePort();
    const target = new URL(upstream);
    let proxy: Proxy | null = null;
    const server = createServer((req, res) => {
      const p = proxy as Proxy;
      if (p.mode === "refuse") return req.socket.destroy();
      const seen: Exchange = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, status: 0, responseHeaders: {} };
      p.exchanges.push(seen);
      if (p.mode === "gateway-error") {
        seen.status = 502;
        res.writeHead(502, { "Content-Type": "text/html" }).end("<html>502 Bad Gateway</html>");
        return;
      }
      const forward = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          seen.status = answer.statusCode ?? 0;
          seen.responseHeaders = answer.headers;
          res.writeHead(seen.status, answer.headers);
          if ((answer.headers["content-type"] ?? "").startsWith("text/event-stream")) {
            p.#streams.add(res);
            res.once("close", () => p.#streams.delete(res));
            res.flushHeaders();
          }
          answer.pipe(res);
          res.once("close", () => answer.destroy());
        },
      );
      forward.once("error", () => res.destroy());
      req.pipe(forward);
    });
    server.on("connection", (socket) => {
      const p = proxy as Proxy;
      p.#sockets.add(socket);
      socket.once("close", () => p.#sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    proxy = new Proxy(upstream, `http://127.0.0.1:${port}`, server);
    return proxy;
  }

  /** Exchanges whose path contains `path`. */
  seen(path: string): Exchange[] {
    return this.exchanges.filter((e) => e.path.includes(path));
  }

  /** Cut every open event stream, as a restarting load balancer would. */
  cutStreams(): number {
    const cut = this.#streams.size;
    for (const stream of this.#streams) stream.destroy();
    return cut;
  }

  /** Drop every open connection (keep-alive ones included), so the next request connects anew. */
  dropConnections(): void {
    for (const socket of this.#sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    this.dropConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
