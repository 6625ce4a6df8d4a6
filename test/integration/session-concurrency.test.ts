/**
 * A session is one truthful shell under concurrency (issue 34), against one real docker sandbox: calls
 * run one at a time in arrival order, each starting where the previous one ended; queued time counts
 * against the timeout; a background job's late output is not the next command's; a cwd with a newline
 * is observed at once; an over-large result fits one 8 MiB message on MCP stdio and HTTP alike.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecResult } from '../../src/shared/exec-result.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');
const LIMIT = 8 * 1024 * 1024;
const SESSIONS = 10;
const PER_SESSION = 20;

/** `sandbox-desk mcp` spoken to line by line: the raw answers, to measure them and see their order. */
class RawStdioMcp {
  private readonly child: ChildProcessWithoutNullStreams;
  private buf = Buffer.alloc(0);
  readonly lines: Buffer[] = [];
  private waiters: Array<() => void> = [];

  constructor(home: string) {
    this.child = spawn(process.execPath, [BIN, 'mcp'], { env: { ...process.env, SANDBOX_DESK_HOME: home } });
    this.child.stdout.on('data', (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c]);
      for (let nl = this.buf.indexOf(0x0a); nl >= 0; nl = this.buf.indexOf(0x0a)) {
        this.lines.push(this.buf.subarray(0, nl));
        this.buf = this.buf.subarray(nl + 1);
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }

  send(...messages: object[]): void {
    // One write: the calls arrive pipelined, back to back.
    this.child.stdin.write(messages.map((m) => JSON.stringify(m) + '\n').join(''));
  }

  async answers(n: number): Promise<Buffer[]> {
    while (this.lines.length < n) await new Promise<void>((r) => this.waiters.push(r));
    return this.lines.splice(0, n);
  }

  async init(): Promise<void> {
    this.send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    await this.answers(1);
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  close(): void {
    this.child.stdin.end();
    this.child.kill();
  }
}

const execCall = (id: number, args: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'execute_shell_command', arguments: args },
});

type ToolAnswer = { id: number; result: { structuredContent: ExecResult & Record<string, unknown>; content: { text: string }[] } };

describe('one session, one truthful shell under concurrency (real docker sandbox)', () => {
  let t: TestDesk;
  const sb = uniqueName('conc');
  const exec = (session: string, command: string, timeoutSeconds?: number) =>
    t.desk.exec({ sandbox: sb, session, command, ...(timeoutSeconds ? { timeoutSeconds } : {}) });

  beforeAll(async () => {
    t = tempDesk();
    await t.desk.createSandbox({ name: sb, backend: 'docker' });
    await exec('setup', `mkdir -p /tmp/cc/s{0..${SESSIONS - 1}}-{0..${PER_SESSION - 1}} /tmp/q1`);
  }, 120_000);
  afterAll(async () => {
    await t?.dispose();
  });

  it(`${SESSIONS * PER_SESSION} concurrent calls over ${SESSIONS} sessions: each starts where the call before it (by arrival) ended`, async () => {
    const calls: Array<{ s: number; i: number; p: Promise<ExecResult> }> = [];
    for (let i = 0; i < PER_SESSION; i++)
      for (let s = 0; s < SESSIONS; s++) calls.push({ s, i, p: exec(`c${s}`, `pwd; cd /tmp/cc/s${s}-${i}`) });
    const results = await Promise.all(calls.map((c) => c.p));
    const wrong = calls.filter((c, n) => {
      const expected = c.i === 0 ? '/home/agent' : `/tmp/cc/s${c.s}-${c.i - 1}`;
      return results[n]!.stdout !== `${expected}\n` || results[n]!.startCwd !== expected;
    });
    expect(wrong.map((c) => `c${c.s}#${c.i}`)).toEqual([]);
    for (let s = 0; s < SESSIONS; s++) {
      expect(t.desk.listSessions(sb).find((x) => x.key === `c${s}`)?.cwd).toBe(`/tmp/cc/s${s}-${PER_SESSION - 1}`);
    }
  }, 60_000);

  it('`sleep; cd /tmp/q1` then `pwd`: the pwd runs after it, in /tmp/q1, and the record keeps /tmp/q1; a call queued past its timeout runs nothing', async () => {
    const a = exec('q', 'sleep 2; cd /tmp/q1');
    const b = exec('q', 'pwd');
    const t0 = performance.now();
    // Asked 1 s, queued behind a 2 s command: it ends at its deadline, not after the queue.
    const late = await exec('q', 'touch /tmp/queued-ran; cd /', 1);
    expect(performance.now() - t0).toBeLessThan(1900);
    expect(late).toMatchObject({ timedOut: true, exitCode: 124, cwdObserved: false, cwd: null });
    expect(late.queuedMs).toBeGreaterThanOrEqual(900);
    expect(late.warnings.map((w) => w.code)).toContain('queue_timeout');
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.cwd).toBe('/tmp/q1');
    expect(rb).toMatchObject({ stdout: '/tmp/q1\n', startCwd: '/tmp/q1', cwd: '/tmp/q1' });
    expect(rb.queuedMs).toBeGreaterThan(1000);
    expect(t.desk.listSessions(sb).find((x) => x.key === 'q')?.cwd).toBe('/tmp/q1');
    expect((await exec('q', 'test -e /tmp/queued-ran; echo $?')).stdout).toBe('1\n');
  }, 30_000);

  it("a background job's late output is not given to the next command, stdout or stderr", async () => {
    await exec('late', '(sleep 1; echo OLD; echo OLDERR >&2; touch /tmp/late-done) & echo started');
    // Ready check in another session: the job has printed both lines.
    expect((await exec('probe', 'for i in $(seq 100); do test -e /tmp/late-done && break; sleep 0.05; done; echo ok')).stdout).toBe('ok\n');
    const next = await exec('late', 'echo NEW; echo NEWERR >&2');
    expect(next.stdout).toBe('NEW\n');
    expect(next.stderr).toBe('NEWERR\n');
  }, 30_000);

  it("over the CLI and MCP (the service's session shells): late output is not the next command's; the service logs it, marked late", async () => {
    const env = { ...process.env, SANDBOX_DESK_HOME: t.dataDir };
    const cli = (...args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((ok) => {
        const child = spawn(process.execPath, [BIN, ...args], { env });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        child.on('close', (code) => ok({ code, stdout, stderr }));
      });
    // The job prints both lines between the two commands: waited for by a probe in another session.
    const jobDone = async (tag: string) => {
      const r = await exec(`probe-${tag}`, `for i in $(seq 100); do test -e /tmp/late-${tag}-done && break; sleep 0.05; done; echo ok`);
      expect(r.stdout).toBe('ok\n');
    };
    const job = (tag: string) => `(sleep 1; echo OLD-${tag}; echo OLDERR-${tag} >&2; touch /tmp/late-${tag}-done) & echo started`;

    const overCli = async () => {
      expect(await cli('exec', sb, '--session', 'late-cli', '--', job('cli'))).toMatchObject({ code: 0, stdout: 'started\n' });
      await jobDone('cli');
      expect(await cli('exec', sb, '--session', 'late-cli', '--', 'echo NEW; echo NEWERR >&2')).toEqual({
        code: 0,
        stdout: 'NEW\n',
        stderr: 'NEWERR\n',
      });
    };
    const overMcp = async () => {
      const mcp = new RawStdioMcp(t.dataDir);
      try {
        await mcp.init();
        mcp.send(execCall(21, { sandbox: sb, session: 'late-mcp', command: job('mcp') }));
        await mcp.answers(1);
        await jobDone('mcp');
        mcp.send(execCall(22, { sandbox: sb, session: 'late-mcp', command: 'echo NEW; echo NEWERR >&2' }));
        const [line] = await mcp.answers(1);
        expect((JSON.parse(line!.toString()) as ToolAnswer).result.structuredContent).toMatchObject({
          stdout: 'NEW\n',
          stderr: 'NEWERR\n',
        });
      } finally {
        mcp.close();
      }
    };
    // Side by side (two sessions of one service): the file stays fast.
    await Promise.all([overCli(), overMcp()]);

    // Not lost: the service's log has each stream's late bytes, with the session they came from.
    const late = (): Array<{ session: string; stream: string; text: string }> =>
      readFileSync(join(t.dataDir, 'logs', 'sandbox-desk.log'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('late output'))
        .map((l) => JSON.parse(l) as { session: string; stream: string; text: string });
    const has = (session: string, stream: string, text: string) =>
      late().some((l) => l.session === session && l.stream === stream && l.text.includes(text));
    const deadline = Date.now() + 5000;
    const want = (): boolean =>
      has('late-cli', 'stdout', 'OLD-cli') &&
      has('late-cli', 'stderr', 'OLDERR-cli') &&
      has('late-mcp', 'stdout', 'OLD-mcp') &&
      has('late-mcp', 'stderr', 'OLDERR-mcp');
    while (!want() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(late().filter((l) => l.session.startsWith('late-'))).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ session: 'late-cli', stream: 'stdout', text: 'OLD-cli\n' }),
        expect.objectContaining({ session: 'late-cli', stream: 'stderr', text: 'OLDERR-cli\n' }),
        expect.objectContaining({ session: 'late-mcp', stream: 'stdout', text: 'OLD-mcp\n' }),
        expect.objectContaining({ session: 'late-mcp', stream: 'stderr', text: 'OLDERR-mcp\n' }),
      ]),
    );
  }, 40_000);

  it('a cwd with a newline in its name is observed exactly, at once', async () => {
    const t0 = performance.now();
    const r = await exec('nl', "mkdir -p $'/tmp/..\\nzz' && cd $'/tmp/..\\nzz'", 20);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(r).toMatchObject({ cwd: '/tmp/..\nzz', cwdObserved: true, timedOut: false, exitCode: 0 });
    expect(r.warnings.map((w) => w.code)).not.toContain('framing_broken');
    expect(await exec('nl', 'printf %s "$PWD"')).toMatchObject({ stdout: '/tmp/..\nzz', startCwd: '/tmp/..\nzz' });
  }, 30_000);

  it('MCP stdio: two calls pipelined on one session are answered and run in order; 1.5 MB of NULs keeps exit code and cwd in ≤ 8 MiB', async () => {
    const mcp = new RawStdioMcp(t.dataDir);
    try {
      await mcp.init();
      mcp.send(
        execCall(1, { sandbox: sb, session: 'pipe', command: 'sleep 1; cd /tmp/q1; echo first' }),
        execCall(2, { sandbox: sb, session: 'pipe', command: 'pwd' }),
      );
      const [first, second] = (await mcp.answers(2)).map((l) => JSON.parse(l.toString()) as ToolAnswer);
      expect([first!.id, second!.id]).toEqual([1, 2]);
      expect(second!.result.structuredContent.stdout).toBe('/tmp/q1\n');

      mcp.send(execCall(3, { sandbox: sb, session: 'pipe', command: 'head -c 1500000 /dev/zero; cd /tmp; exit 3' }));
      const [line] = await mcp.answers(1);
      expect(line!.length).toBeLessThanOrEqual(LIMIT);
      const big = (JSON.parse(line!.toString()) as ToolAnswer).result.structuredContent;
      expect(big).toMatchObject({ exitCode: 3, cwd: '/tmp', cwdObserved: true, truncated: { stdout: true } });
      expect(big.stdoutTruncated).toEqual({ keptBytes: big.stdout.length, totalBytes: 1_500_000 });
      expect(big.warnings.map((w) => w.code)).toContain('output_truncated');
    } finally {
      mcp.close();
    }
  }, 40_000);

  it('HTTP /mcp: the same 1.5 MB of NULs answers within 8 MiB, with exit code, cwd and what was cut', async () => {
    const child = spawn(process.execPath, [BIN, 'serve', '--mcp', '--json'], {
      env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const info = await new Promise<{ mcpUrl: string; agentToken: string }>((ok, fail) => {
        let buf = '';
        child.stdout.on('data', (c: Buffer) => {
          buf += c.toString();
          if (buf.includes('\n')) ok(JSON.parse(buf.split('\n')[0]!) as { mcpUrl: string; agentToken: string });
        });
        child.on('exit', (code) => fail(new Error(`serve exited ${code}`)));
      });
      const res = await fetch(info.mcpUrl, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${info.agentToken}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(execCall(7, { sandbox: sb, session: 'http', command: 'head -c 1500000 /dev/zero; cd /tmp; exit 3' })),
      });
      const body = Buffer.from(await res.arrayBuffer());
      expect(res.status).toBe(200);
      expect(body.length).toBeLessThanOrEqual(LIMIT);
      const sc = (JSON.parse(body.toString()) as ToolAnswer).result.structuredContent;
      expect(sc).toMatchObject({ exitCode: 3, cwd: '/tmp', cwdObserved: true, truncated: { stdout: true } });
      expect(sc.stdoutTruncated).toEqual({ keptBytes: sc.stdout.length, totalBytes: 1_500_000 });
    } finally {
      child.kill('SIGINT');
    }
  }, 40_000);
});
