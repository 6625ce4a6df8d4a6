import { createConnection, type Socket } from 'node:net';
import { SandboxDeskError } from '../../shared/errors.js';

/**
 * A minimal QMP client: connect, negotiate capabilities, run one command, close. QMP is line-delimited
 * JSON; replies carry `return` or `error`, and asynchronous `event`s may arrive in between.
 */
export async function qmpCommand(socketPath: string, command: string, args?: Record<string, unknown>, timeoutMs = 5_000): Promise<unknown> {
  const sock = await new Promise<Socket>((resolve, reject) => {
    const s = createConnection(socketPath);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  }).catch((err: NodeJS.ErrnoException) => {
    throw new SandboxDeskError('backend_unavailable', `cannot reach the VM's QMP socket ${socketPath}: ${err.code ?? err.message}`);
  });
  try {
    const lines = lineReader(sock);
    const deadline = Date.now() + timeoutMs;
    const next = async (): Promise<Record<string, unknown>> => {
      for (;;) {
        const line = await lines.next(deadline - Date.now());
        const msg = JSON.parse(line) as Record<string, unknown>;
        if (!('event' in msg)) return msg;
      }
    };
    const greeting = await next();
    if (!('QMP' in greeting)) throw new Error(`unexpected QMP greeting ${JSON.stringify(greeting)}`);
    sock.write(JSON.stringify({ execute: 'qmp_capabilities' }) + '\n');
    await next();
    sock.write(JSON.stringify(args ? { execute: command, arguments: args } : { execute: command }) + '\n');
    const reply = await next();
    if ('error' in reply) {
      const e = reply.error as { desc?: string };
      throw new SandboxDeskError('backend_unavailable', `QMP ${command} failed: ${e.desc ?? JSON.stringify(e)}`);
    }
    return reply.return;
  } finally {
    sock.destroy();
  }
}

function lineReader(sock: Socket): { next(timeoutMs: number): Promise<string> } {
  let buf = '';
  const lines: string[] = [];
  let waiter: (() => void) | null = null;
  let ended: Error | null = null;
  sock.setEncoding('utf8');
  sock.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) lines.push(line);
    }
    waiter?.();
  });
  const end = (e: Error): void => {
    ended ??= e;
    waiter?.();
  };
  sock.on('close', () => end(new Error('QMP connection closed')));
  sock.on('error', (e) => end(e));
  return {
    async next(timeoutMs: number): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      // A wake-up is any chunk, not a whole line: a reply split across chunks (its newline in a later
      // one) must keep waiting until the deadline, or `stop` mistakes a slow reply for a hung VM.
      while (lines.length === 0) {
        if (ended) throw ended;
        const left = deadline - Date.now();
        if (left <= 0) throw new Error('QMP did not answer in time');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          waiter = () => {
            clearTimeout(t);
            resolve();
          };
        });
        waiter = null;
      }
      return lines.shift()!;
    },
  };
}
