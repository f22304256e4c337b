/**
 * The MCP endpoint of an {@link AcpAgent}: an HTTP server on the loopback interface, on a
 * port the system picks, where the agent reaches the MCP server of each client-tool
 * session (`http://127.0.0.1:PORT/mcp/TOKEN`, with the session's secret as a bearer
 * token). Only the agent is meant to reach it.
 * @module
 */

import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { Socket } from 'node:net';
import type { McpHttpRequest } from '../mcp.js';

/** The path under which each session's server has its token. */
const PREFIX = '/mcp/';

/** One request to the endpoint, checked and read: for the session whose path it names. */
export interface McpEndpointRequest {
  /** The path segment after `/mcp/`. */
  readonly token: string;
  /** The `Authorization` header. */
  readonly authorization: string | undefined;
  readonly request: McpHttpRequest;
  readonly response: ServerResponse;
}

/**
 * The HTTP server. Every request is checked before anything is read: its `Host` must name
 * the server by a loopback name (`127.0.0.1`, `localhost`, `*.localhost`, `[::1]`) and its
 * port (400 otherwise: a page rebinding a DNS name to 127.0.0.1 stops here), a request
 * from a web page (`Origin`) is refused (403; no CORS header is ever sent), the path must
 * be a session's (404 otherwise). The body is read up to `maxBodyBytes` and one byte more
 * (a longer one is answered 413 by the session's server). `serve` answers the rest: the
 * session's secret (401), then the MCP server. {@link close} ends every connection.
 */
export class McpEndpoint {
  /** Resolves with the endpoint's URL (`http://127.0.0.1:PORT/mcp/`) once it listens. */
  readonly url: Promise<string>;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #maxBodyBytes: number;
  #port = 0;
  #closed = false;

  constructor(serve: (request: McpEndpointRequest) => void, maxBodyBytes: number) {
    this.#maxBodyBytes = maxBodyBytes;
    this.#server = createServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, (req, res) => this.#handle(req, res, serve));
    this.#server.on('connection', (socket: Socket) => {
      if (this.#closed) {
        socket.destroy();
        return;
      }
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    this.url = new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(0, '127.0.0.1', () => {
        const address = this.#server.address();
        this.#port = address !== null && typeof address === 'object' ? address.port : 0;
        resolve(`http://127.0.0.1:${this.#port}${PREFIX}`);
      });
    });
    // Whoever awaits the URL sees a failure to listen; nothing else must.
    this.url.catch(() => {});
  }

  /** Stops listening and destroys every connection, open answers included; resolves once the server is closed. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // A server still binding is closed once it listens.
    await this.url.catch(() => {});
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    await new Promise<void>((resolve) => {
      if (!this.#server.listening) {
        resolve();
        return;
      }
      this.#server.close(() => resolve());
    });
  }

  #handle(req: IncomingMessage, res: ServerResponse, serve: (request: McpEndpointRequest) => void): void {
    if (!this.#hostAllowed(req.headers.host)) {
      refuse(res, 400, 'This Host is not allowed: the MCP endpoint is reached by a loopback name.', true);
      return;
    }
    if (req.headers.origin !== undefined) {
      refuse(res, 403, 'Requests from web pages are not allowed.', true);
      return;
    }
    const path = (req.url ?? '').split('?')[0]!;
    const token = path.startsWith(PREFIX) ? path.slice(PREFIX.length) : '';
    if (token.length === 0 || token.includes('/')) {
      refuse(res, 404, undefined, false);
      return;
    }
    const chunks: Buffer[] = [];
    let length = 0;
    let over = false;
    const done = (): void => {
      req.off('data', take);
      const body = Buffer.concat(chunks);
      const header = (name: string): string | undefined => {
        const value = req.headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      };
      const request: McpHttpRequest = { method: req.method ?? 'GET', body };
      for (const [field, name] of [
        ['accept', 'accept'],
        ['contentType', 'content-type'],
        ['sessionId', 'mcp-session-id'],
        ['protocolVersion', 'mcp-protocol-version'],
      ] as const) {
        const value = header(name);
        if (value !== undefined) request[field] = value;
      }
      // The rest of an over-long body is never read: the connection ends with the answer.
      if (over) res.shouldKeepAlive = false;
      serve({ token, authorization: header('authorization'), request, response: res });
    };
    const take = (chunk: Buffer): void => {
      if (over) return;
      const room = this.#maxBodyBytes + 1 - length;
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      length += Math.min(chunk.length, room);
      if (length > this.#maxBodyBytes) {
        over = true;
        req.pause();
        done();
      }
    };
    req.on('data', take);
    req.on('end', () => {
      if (!over) done();
    });
    req.on('error', () => res.destroy());
  }

  /** Whether `host` names this server by a loopback name and its port. */
  #hostAllowed(host: string | undefined): boolean {
    if (host === undefined) return false;
    const match = /^(\[::1\]|[^:[\]]+)(?::(\d+))?$/.exec(host.trim().toLowerCase());
    if (match === null) return false;
    const [, name, port] = match;
    if (port !== undefined && Number(port) !== this.#port) return false;
    const bare = name!.endsWith('.') ? name!.slice(0, -1) : name!;
    return bare === '127.0.0.1' || bare === '[::1]' || bare === 'localhost' || bare.endsWith('.localhost');
  }
}

/** Answers `status` with a JSON-RPC error naming `message` (or no body), closing the connection when told. */
export function refuse(res: ServerResponse, status: number, message: string | undefined, closing: boolean): void {
  if (closing) res.shouldKeepAlive = false;
  if (message === undefined) {
    res.writeHead(status).end();
    return;
  }
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message } });
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);
}
