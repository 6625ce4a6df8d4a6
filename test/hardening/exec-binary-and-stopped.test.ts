/**
 * Issue 35, two defects of `exec` against one real Docker sandbox:
 *  - binary output: stdout/stderr that are not UTF-8 come back as base64 of the exact bytes with
 *    `encoding` saying so, the same through the CLI's --json, the HTTP API and MCP (they became U+FFFD);
 *    the plain CLI passes the bytes through unchanged;
 *  - a sandbox killed or removed behind the app's back while a command runs: the command's answer says
 *    the sandbox stopped (sandbox_not_running / sandbox_missing, with what to do), not "cwd_unobserved …
 *    it replaced the shell".
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliIn, removeHome, startServe, tempHome, type ServeChild } from './serve-child.js';

/** Bytes no UTF-8 decoder keeps: a NUL, 0xff, a lone continuation byte, a cut character. */
const BINARY = Buffer.from([0x41, 0x00, 0xff, 0x80, 0x0a, 0xe2, 0x82]);
const printBinary = (toStderr = false) =>
  `printf '${[...BINARY].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('')}'${toStderr ? ' >&2' : ''}`;

describe('exec: binary output and a sandbox stopped behind the app’s back', () => {
  const home = tempHome('execbin');
  const sb = `xb-${process.pid}`;
  const cli = cliIn(home);
  let serve: ServeChild;
  /** The sandbox's container (the same one after `sandbox start`). */
  let container: string;

  beforeAll(async () => {
    const r = cli(['sandbox', 'create', sb, '--backend', 'docker', '--json']);
    expect(r.status, r.stderr).toBe(0);
    container = (JSON.parse(r.stdout) as { sandbox: { backendRef: string } }).sandbox.backendRef;
    expect(container).toMatch(/^[0-9a-f]{64}$/);
    serve = await startServe(home);
  });
  afterAll(async () => {
    await serve?.stop();
    cli(['sandbox', 'rm', sb, '--force']);
    removeHome(home);
  });

  /** Calls the serve child's HTTP API as the window does: status and body. */
  const api = async (method: string, params: unknown) => {
    const res = await fetch(`${serve.origin}/api/call/${method}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${serve.uiToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(params),
    });
    return { status: res.status, body: (await res.json()) as { ok?: any; error?: { code: string; message: string; hint?: string } } };
  };

  const command = `${printBinary()}; ${printBinary(true)}; echo`;
  const expectBinary = (r: { stdout: string; stderr: string; encoding?: unknown }) => {
    expect(r.encoding).toEqual({ stdout: 'base64', stderr: 'base64' });
    expect(Buffer.from(r.stdout, 'base64')).toEqual(Buffer.concat([BINARY, Buffer.from('\n')]));
    expect(Buffer.from(r.stderr, 'base64')).toEqual(BINARY);
  };

  it('CLI: --json gives base64 with encoding; the plain output is the bytes themselves', () => {
    const j = cli(['exec', sb, '--json', '--', command]);
    expect(j.status, j.stderr).toBe(0);
    expectBinary(JSON.parse(j.stdout) as { stdout: string; stderr: string });
    const plain = spawnSync(process.execPath, [BIN, 'exec', sb, '--', printBinary()], { env: { ...process.env, SANDBOX_DESK_HOME: home } });
    expect(plain.status).toBe(0);
    expect(plain.stdout).toEqual(BINARY);
  });

  it('HTTP API: exec gives base64 with encoding; valid UTF-8 stays text', async () => {
    const exec = async (c: string) => {
      const r = await api('exec', { sandbox: sb, command: c });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.ok as { stdout: string; stderr: string };
    };
    expectBinary(await exec(command));
    expect(await exec('echo héllo')).toMatchObject({ stdout: 'héllo\n', encoding: { stdout: 'utf8', stderr: 'utf8' } });
  });

  it('MCP: execute_shell_command gives base64 with encoding', async () => {
    const client = new Client({ name: 'execbin', version: '1' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'mcp'],
        env: { ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: home },
      }),
    );
    try {
      const r = (await client.callTool({ name: 'execute_shell_command', arguments: { sandbox: sb, command } })) as {
        content: { text: string }[];
      };
      expectBinary(JSON.parse(r.content[0]!.text) as { stdout: string; stderr: string });
    } finally {
      await client.close();
    }
  });

  /** A command that says when it runs, then sleeps; `act` runs once it does. */
  async function whileRunning<T>(start: (command: string) => Promise<T>, act: () => void): Promise<T> {
    const marker = `/tmp/begun-${process.pid}-${Date.now()}`;
    const answer = start(`echo partial; touch ${marker}; sleep 60`);
    for (let i = 0; spawnSync('docker', ['exec', container, 'test', '-e', marker]).status !== 0; i++) {
      if (i > 300) throw new Error('the command did not start within 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    act();
    return answer;
  }

  it('CLI, docker kill during a command: sandbox_not_running, "stopped while the command ran", how to start it', async () => {
    const { status, out } = await whileRunning(
      (command) =>
        new Promise<{ status: number | null; out: string }>((resolve) => {
          const child = spawn(process.execPath, [BIN, 'exec', sb, '--json', '--', command], {
            env: { ...process.env, SANDBOX_DESK_HOME: home },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let out = '';
          child.stdout.on('data', (c: Buffer) => (out += c.toString()));
          child.on('close', (code) => resolve({ status: code, out }));
        }),
      () => execFileSync('docker', ['kill', container], { stdio: 'ignore' }),
    );
    expect(status).toBe(125);
    const { error } = JSON.parse(out) as { error: { code: string; message: string; hint: string } };
    expect(error).toMatchObject({ code: 'sandbox_not_running', hint: `start it with \`sandbox-desk sandbox start ${sb}\`` });
    expect(error.message).toMatch(new RegExp(`sandbox ${sb} is not running.*stopped while the command ran`));
  });

  it('HTTP API, docker rm -f during a command: sandbox_missing, naming the removal and what to do', async () => {
    expect((await api('startSandbox', { name: sb })).status).toBe(200);
    const { status, body } = await whileRunning(
      (command) => api('exec', { sandbox: sb, command }),
      () => execFileSync('docker', ['rm', '-f', container], { stdio: 'ignore' }),
    );
    expect(status).toBe(404);
    expect(body.error).toMatchObject({ code: 'sandbox_missing', hint: expect.stringMatching(/sandbox rm/) });
    expect(body.error!.message).toMatch(
      new RegExp(`sandbox ${sb} is gone: the container (is being removed|was removed outside Sandbox Desk).*stopped while the command ran`),
    );
  });
});
