/**
 * A real `sandbox-desk serve` child process for the hardening tests, in its own data directory.
 * SANDBOX_DESK_BIN points the tests at another build (to check that a test fails before a fix).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const BIN = process.env.SANDBOX_DESK_BIN ?? resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

export interface ServeChild {
  child: ChildProcess;
  home: string;
  port: number;
  origin: string;
  uiToken: string;
  /** The agent token serve --mcp printed (null from a build that prints none). */
  agentToken: string | null;
  mcpUrl: string;
  stderr: () => string;
  /**
   * Runs the CLI against the same data directory, without blocking this process's event loop (a
   * blocked loop lets keep-alive sockets go stale under the HTTP client).
   */
  cli: (args: string[]) => Promise<{ status: number | null; stdout: string; stderr: string }>;
  stop: () => Promise<void>;
}

export function tempHome(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `sdesk-${prefix}-`));
}

export function cliIn(home: string) {
  return (args: string[], input?: string) => {
    const r = spawnSync(process.execPath, [BIN, ...args], {
      env: { ...process.env, SANDBOX_DESK_HOME: home },
      encoding: 'utf8',
      input,
      timeout: 180_000,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
}

export async function startServe(home: string, extraArgs: string[] = []): Promise<ServeChild> {
  const child = spawn(process.execPath, [BIN, 'serve', '--mcp', '--json', ...extraArgs], {
    env: { ...process.env, SANDBOX_DESK_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const info = await new Promise<{ url: string; mcpUrl: string; agentToken?: string; token?: string }>((ok, fail) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      if (buf.includes('\n')) ok(JSON.parse(buf.split('\n')[0]!) as { url: string; mcpUrl: string; agentToken?: string; token?: string });
    });
    child.on('exit', (code) => fail(new Error(`serve exited ${code}: ${err}`)));
  });
  const url = new URL(info.url);
  return {
    child,
    home,
    port: Number(url.port),
    origin: url.origin,
    uiToken: url.searchParams.get('token')!,
    // An older build printed one token for everything as "token": the tests then show what it opened.
    agentToken: info.agentToken ?? info.token ?? null,
    mcpUrl: info.mcpUrl,
    stderr: () => err,
    cli: (args) =>
      new Promise((ok) => {
        const c = spawn(process.execPath, [BIN, ...args], {
          env: { ...process.env, SANDBOX_DESK_HOME: home },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        c.on('close', (status) => ok({ status, stdout, stderr }));
      }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    },
  };
}

export function removeHome(home: string): void {
  rmSync(home, { recursive: true, force: true });
}
