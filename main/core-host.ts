import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Config } from '../src/platform/config.js';
import type { Logger } from '../src/platform/log.js';

/** What the window needs from the core: a way to call the contract, and the server its streams use. */
export interface CoreHost {
  call(method: unknown, params: unknown): Promise<unknown>;
  close(): Promise<void>;
  /** The core's events, when it runs in this process (a child core's window uses `/ws/events` instead). */
  onEvent?(listener: (event: unknown) => void): { dispose(): void };
}

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));

/**
 * Runs the core in this (main) process. Its native modules (better-sqlite3, node-pty) must then be
 * built for Electron's ABI — a packaged app is (electron-builder rebuilds them). In a checkout they are
 * built for the system Node, so loading fails with NODE_MODULE_VERSION; then the same core runs as a
 * child `node bin/sandbox-desk.js serve` on loopback and calls cross over its HTTP API.
 */
export async function startCore(opts: { config: Config; logger: Logger }): Promise<CoreHost> {
  try {
    const [{ SandboxDesk }, { LocalServer }] = await Promise.all([
      import('../src/api/sandbox-desk.js'),
      import('../src/api/local-server.js'),
    ]);
    const desk = new SandboxDesk({ config: opts.config, logger: opts.logger });
    // Streams go over loopback WebSockets; the window's pages come from file://, whose Origin is "file://".
    const server = new LocalServer({ desk, extraOrigins: ['file://'] });
    await server.listen();
    return {
      call: (m, p) => server.call(m, p),
      onEvent: (listener) => {
        const listening = desk.events.listen();
        const sub = desk.events.onEvent(listener);
        return { dispose: () => (sub.dispose(), listening.dispose()) };
      },
      close: async () => {
        await server.close();
        await desk.close();
      },
    };
  } catch (err) {
    if (!/NODE_MODULE_VERSION|different Node\.js version/.test(String(err))) throw err;
    opts.logger.info('native modules are built for Node, not Electron: running the core as a child `serve`');
    return startChildCore();
  }
}

async function startChildCore(): Promise<CoreHost> {
  const child: ChildProcess = spawn(
    process.env.SANDBOX_DESK_NODE ?? 'node',
    [here('../../bin/sandbox-desk.js'), 'serve', '--json', '--allow-origin', 'file://'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<URL>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      if (buf.includes('\n')) resolve(new URL((JSON.parse(buf.split('\n')[0]!) as { url: string }).url));
    });
    child.once('exit', (code) => reject(new Error(`the core exited (${code}) before it served`)));
  });
  const token = url.searchParams.get('token')!;
  return {
    call: async (m, p) => {
      const r = await fetch(`${url.origin}/api/call/${String(m)}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(p ?? {}),
      });
      return r.json() as Promise<unknown>;
    },
    close: async () => {
      child.kill('SIGTERM');
    },
  };
}
