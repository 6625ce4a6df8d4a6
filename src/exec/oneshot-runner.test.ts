import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { runOneshot } from './oneshot-runner.js';

/** A sandbox boundary faked as the local machine: the exec prefix is `env`, so the wrapper runs here. */
const local = { execPrefix: () => ['env'], joinsArgv: false } as unknown as SandboxEnvironment;

/** Live processes whose argv[0] is this test's own marker (set with `exec -a`). */
function withMarker(marker: string): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return (
          readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0')[0] === marker &&
          !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${d}/stat`, 'utf8'))
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

const req = (command: string, signal?: AbortSignal) => ({
  target: '/tmp',
  tmpDir: '/tmp',
  command,
  timeoutMs: 30_000,
  maxOutputBytes: 1 << 20,
  signal,
});

describe('runOneshot (local bash behind a faked exec prefix)', () => {
  it('runs a command and reports its frames', async () => {
    const r = await runOneshot(local, undefined, req('echo hi; cd /; exit 4'));
    expect(r).toMatchObject({
      stdout: Buffer.from('hi\n'),
      end: { exitCode: 4, state: 'ok', cwd: '/' },
      killed: null,
      framingBroken: null,
    });
  });

  it('an interrupt that comes before the start frame still kills the command inside the sandbox', async () => {
    const marker = `sd-early-${randomBytes(6).toString('hex')}`;
    const ctl = new AbortController();
    ctl.abort();
    try {
      const r = await runOneshot(local, undefined, req(`(exec -a ${marker} sleep 30) & wait`, ctl.signal));
      expect(r.killed).toBe('interrupt');
      expect(r.start).not.toBeNull();
      await new Promise((res) => setTimeout(res, 300));
      expect(withMarker(marker)).toEqual([]);
    } finally {
      for (const p of withMarker(marker)) process.kill(p, 'SIGKILL');
    }
  });
});
