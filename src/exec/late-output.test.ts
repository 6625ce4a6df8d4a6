import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { CommandCapture } from './command-capture.js';
import { SessionShell, type LateOutput } from './session-shell.js';

/** A sandbox boundary faked as the local machine: the exec prefix is `env`, so the wrapper runs here. */
const local = { execPrefix: () => ['env'], joinsArgv: false, incarnation: 'local' } as unknown as SandboxEnvironment;
const req = (command: string) => ({ target: '/tmp', tmpDir: '/tmp', command, timeoutMs: 10_000, maxOutputBytes: 1 << 20 });

const dir = mkdtempSync(join(tmpdir(), 'sd-late-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a background job's late output is never the next command's (issue 34)", () => {
  it('output printed after its command ended goes to the late-output listeners, stdout and stderr, marked by stream', async () => {
    const shell = await SessionShell.open(local, undefined);
    const late: LateOutput[] = [];
    shell.onLateOutput((l) => late.push(l));
    try {
      const done = join(dir, 'job-done');
      const first = await shell.run(req(`(sleep 0.3; echo OLD; echo OLDERR >&2; touch ${done}) & echo started`));
      expect(first.stdout.toString()).toBe('started\n');
      // The job has printed both lines (between commands) before the next command is sent.
      const until = Date.now() + 5000;
      while (!existsSync(done) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      // Reported as it comes, not held back until the next command's output arrives.
      await expect.poll(() => Buffer.concat(late.map((l) => l.bytes)).length, { timeout: 5000 }).toBe('OLD\nOLDERR\n'.length);
      const next = await shell.run(req('echo NEW; echo NEWERR >&2'));
      expect(next.stdout.toString()).toBe('NEW\n');
      expect(next.stderr.toString()).toBe('NEWERR\n');
      expect(next.transportError).toBe('');
      const text = (s: 'stdout' | 'stderr'): string =>
        Buffer.concat(late.filter((l) => l.stream === s).map((l) => l.bytes)).toString('utf8');
      expect(text('stdout')).toBe('OLD\n');
      expect(text('stderr')).toBe('OLDERR\n');
    } finally {
      shell.close();
    }
  });

  it("bytes before a command's begin frames (B on stdout, S on stderr) are late output, not the command's", () => {
    const late: Array<[string, string]> = [];
    const cap = new CommandCapture('NONCE', 1024, (stream, chunk) => late.push([stream, chunk.toString()]));
    cap.stdoutPayload(Buffer.from('OLD\n'));
    cap.stderrPayload(Buffer.from('OLDERR\n'));
    cap.frame({ nonce: 'NONCE', fields: ['S', '42', 'ok', '/tmp'] });
    cap.frame({ nonce: 'NONCE', fields: ['B'] });
    cap.stdoutPayload(Buffer.from('NEW\n'));
    cap.stderrPayload(Buffer.from('NEWERR\n'));
    const r = cap.result(null, null);
    expect(r.stdout.toString()).toBe('NEW\n');
    expect(r.stderr.toString()).toBe('NEWERR\n');
    expect(r.transportError).toBe('');
    expect(late).toEqual([
      ['stdout', 'OLD\n'],
      ['stderr', 'OLDERR\n'],
    ]);
  });

  it('one-shot (no listener): stderr before the start frame stays the transport error it is', () => {
    const cap = new CommandCapture('NONCE', 1024);
    cap.stderrPayload(Buffer.from('Error: container is not running\n'));
    expect(cap.result(null, null).transportError).toBe('Error: container is not running');
  });
});
