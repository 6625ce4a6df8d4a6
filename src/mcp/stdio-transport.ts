import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { classifyMessage, errorReply, IdAliases, OversizeSniffer, tooLargeReply, type JsonRpcErrorReply } from './jsonrpc-framing.js';
import { MCP_MESSAGE_MAX_BYTES, describeBytes } from './mcp-limits.js';

/**
 * MCP over stdio (newline-delimited JSON-RPC) that holds its limits instead of dying on them. The
 * SDK's own transport closes the connection when its buffer passes 10 MiB and answers nothing to a
 * line that is not JSON; this one:
 *  - answers a message above `maxBytes` with a JSON-RPC error (-32600, with the request's id when
 *    it can be read from either end) and skips it, keeping the connection;
 *  - answers malformed JSON with -32700 and non-JSON-RPC with -32600 (the spec's replies);
 *  - takes every id JSON-RPC 2.0 allows (null and 1.5 too, which the SDK refuses) and answers with it;
 *  - never sends a message above `maxBytes`: a too-large result becomes an error reply;
 *  - counts requests in flight, so the command can wait for every answer before it exits.
 */
export class LimitedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Set while skipping the rest of a message that is too large. */
  private oversize: OversizeSniffer | null = null;
  private readonly pending = new Set<RequestId>();
  private readonly aliases = new IdAliases();
  private idleWaiters: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly input: Readable = process.stdin,
    private readonly output: Writable = process.stdout,
    private readonly maxBytes = MCP_MESSAGE_MAX_BYTES,
  ) {}

  async start(): Promise<void> {
    this.input.on('data', this.onData);
    this.input.on('error', this.onInputError);
  }

  private readonly onInputError = (err: Error): void => this.onerror?.(err);

  private readonly onData = (chunk: Buffer | string): void => {
    let data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    while (data.length) {
      const nl = data.indexOf(0x0a);
      const piece = nl === -1 ? data : data.subarray(0, nl);
      data = nl === -1 ? Buffer.alloc(0) : data.subarray(nl + 1);
      if (this.oversize) this.oversize.push(piece);
      else if (this.buffered + piece.length > this.maxBytes) {
        // Too large: keep only what identifies it, answer when its line ends.
        this.oversize = new OversizeSniffer();
        for (const c of this.chunks) this.oversize.push(c);
        this.oversize.push(piece);
        this.chunks = [];
        this.buffered = 0;
      } else {
        this.chunks.push(piece);
        this.buffered += piece.length;
      }
      if (nl !== -1) this.endOfLine();
    }
  };

  private endOfLine(): void {
    if (this.oversize) {
      const o = this.oversize;
      this.oversize = null;
      void this.reply(tooLargeReply(o.id(), o.size, this.maxBytes));
      return;
    }
    const line = Buffer.concat(this.chunks, this.buffered).toString('utf8').replace(/\r$/, '');
    this.chunks = [];
    this.buffered = 0;
    if (!line.trim()) return;
    const c = classifyMessage(line, this.aliases);
    if (!c.ok) return void this.reply(c.reply);
    if ('method' in c.message && 'id' in c.message) this.pending.add(c.message.id);
    try {
      this.onmessage?.(c.message);
    } catch (err) {
      this.onerror?.(err as Error);
    }
  }

  private reply(r: JsonRpcErrorReply): Promise<void> {
    return this.write(JSON.stringify(r));
  }

  private write(json: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.output.write(json + '\n')) resolve();
      else this.output.once('drain', () => resolve());
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    // The id the protocol knows (an alias, for an id the SDK cannot carry) settles `pending`; the
    // client gets its own id back.
    const id = 'id' in message && !('method' in message) ? message.id : undefined;
    const wire = this.aliases.restore(message);
    let json = JSON.stringify(wire);
    if (Buffer.byteLength(json) > this.maxBytes) {
      const size = Buffer.byteLength(json);
      if (id === undefined) {
        this.onerror?.(new Error(`dropped an outgoing ${size}-byte notification above the ${describeBytes(this.maxBytes)} limit`));
        return;
      }
      json = JSON.stringify(
        errorReply(
          'id' in wire ? (wire.id as RequestId | null) : null,
          ErrorCode.InternalError,
          `the answer is ${size} bytes, larger than the ${describeBytes(this.maxBytes)} this transport carries; ask for less (read_file with offset and a smaller maxBytes)`,
          { limit: this.maxBytes, size },
        ),
      );
    }
    await this.write(json);
    if (id !== undefined && id !== null) {
      this.pending.delete(id);
      if (this.pending.size === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /** Resolves when every request received so far has been answered. */
  idle(): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.input.off('data', this.onData);
    this.input.off('error', this.onInputError);
    if (this.input.listenerCount('data') === 0) this.input.pause();
    for (const w of this.idleWaiters.splice(0)) w();
    this.onclose?.();
  }
}
