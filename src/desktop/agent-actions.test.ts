import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rejectsWith, thrown } from '../../test/expect-error.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { pointerLocation, xdotoolArgs } from './agent-actions.js';
import { desktopLayout } from './desktop-runtime.js';

describe('xdotoolArgs', () => {
  it('builds argv words, never a shell line', () => {
    expect(xdotoolArgs({ kind: 'click', x: 10, y: 20 })).toEqual(['mousemove', '10', '20', 'click', '1']);
    expect(xdotoolArgs({ kind: 'click', x: 1, y: 2, button: 3, double: true })).toEqual([
      'mousemove',
      '1',
      '2',
      'click',
      '--repeat',
      '2',
      '3',
    ]);
    expect(xdotoolArgs({ kind: 'move', x: 0, y: 0 })).toEqual(['mousemove', '0', '0']);
    expect(xdotoolArgs({ kind: 'scroll', x: 5, y: 6, direction: 'up' })).toEqual(['mousemove', '5', '6', 'click', '--repeat', '3', '4']);
    expect(xdotoolArgs({ kind: 'key', keys: 'ctrl+l Return' })).toEqual(['key', '--', 'ctrl+l', 'Return']);
  });

  it('passes typed text as one argument after --, whatever it contains', () => {
    const text = '$(rm -rf /); `x` "quoted" -- --help';
    expect(xdotoolArgs({ kind: 'type', text })).toEqual(['type', '--delay', '8', '--', text]);
  });

  it.each([
    [{ kind: 'click', x: -1, y: 0 }, /coordinate/],
    [{ kind: 'move', x: 1.5, y: 0 }, /coordinate/],
    [{ kind: 'key', keys: 'rm -rf /' }, /key names/],
    [{ kind: 'key', keys: '--window 0 ctrl+c' }, /key names/],
    [{ kind: 'scroll', x: 1, y: 1, direction: 'down', amount: 0 }, /1–100/],
    [{ kind: 'type', text: 'x'.repeat(10_001) }, /10000/],
  ] as const)('refuses %o', (action, msg) => {
    const err = thrown(() => xdotoolArgs(action));
    expect(err.code).toBe('invalid_input');
    expect(err.message).toMatch(msg);
  });
});

describe('pointerLocation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sdesk-pointer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A "sandbox" whose xdotool fails with `stderr` the first `failures` times, then reads 12,34. */
  function sandboxWithXdotool(failures: number, stderr: string): { env: SandboxEnvironment; calls: () => number } {
    const bin = mkdtempSync(join(dir, 'bin-'));
    const count = join(bin, 'count');
    writeFileSync(count, '');
    writeFileSync(
      join(bin, 'xdotool'),
      `#!/bin/sh\necho x >> '${count}'\nif [ "$(wc -l < '${count}')" -le ${failures} ]; then printf '%s\\n' '${stderr}' >&2; exit 1; fi\nprintf 'X=12\\nY=34\\nSCREEN=0\\nWINDOW=7\\n'\n`,
    );
    chmodSync(join(bin, 'xdotool'), 0o755);
    const env = {
      execPrefix: () => ['env', `PATH=${bin}:${process.env.PATH}`],
      joinsArgv: false,
      getTempDir: () => '/tmp',
    } as unknown as SandboxEnvironment;
    return { env, calls: () => readFileSync(count, 'utf8').split('\n').filter(Boolean).length };
  }

  it('reads again when a window closed under the pointer mid-read (BadWindow), as in a live Xfce desktop', async () => {
    const { env, calls } = sandboxWithXdotool(2, 'X Error of failed request:  BadWindow (invalid Window parameter)');
    await expect(pointerLocation(env, desktopLayout(env, 'p', 1))).resolves.toEqual({ x: 12, y: 34 });
    expect(calls()).toBe(3);
  });

  it('does not retry other failures, and says what xdotool said', async () => {
    const { env, calls } = sandboxWithXdotool(9, 'Error: Cannot open display :1');
    const err = await rejectsWith(pointerLocation(env, desktopLayout(env, 'p', 1)), 'backend_unavailable');
    expect(err.message).toMatch(/getmouselocation failed: Error: Cannot open display/);
    expect(calls()).toBe(1);
  });

  it('gives up after a bounded number of reads when the window race never ends', async () => {
    const { env, calls } = sandboxWithXdotool(99, 'X Error of failed request:  BadWindow (invalid Window parameter)');
    const err = await rejectsWith(pointerLocation(env, desktopLayout(env, 'p', 1)), 'backend_unavailable');
    expect(err.message).toMatch(/BadWindow/);
    expect(calls()).toBe(5);
  });
});
