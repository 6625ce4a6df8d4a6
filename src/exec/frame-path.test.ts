import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { decodeFramePath, FrameSplitter, type Frame } from './frame-splitter.js';
import { runOneshot } from './oneshot-runner.js';
import { SessionShell } from './session-shell.js';

/** A sandbox boundary faked as the local machine: the exec prefix is `env`, so the wrapper runs here. */
const local = { execPrefix: () => ['env'], joinsArgv: false, incarnation: 'local' } as unknown as SandboxEnvironment;

/** Every byte as `\xHH` inside bash's `$'…'`: any name, typed exactly. */
const bashBytes = (b: Buffer): string => `$'${[...b].map((x) => `\\x${x.toString(16).padStart(2, '0')}`).join('')}'`;

const base = mkdtempSync(join(tmpdir(), 'sd-frame-path-'));
// rm walks with openat: it removes the tree past PATH_MAX that fs.rmSync cannot.
afterAll(() => void spawnSync('rm', ['-rf', '--', base]));

/** Directory names a hostile command may create and `cd` into (a component is at most 255 bytes). */
const NAMES: Array<[string, Buffer]> = [
  ['a newline', Buffer.from('..\nzz')],
  ['a carriage return', Buffer.from('cr\rlf')],
  ['colons and a frame-shaped text', Buffer.from('x:E:0:ok:/tmp:x')],
  ['a literal percent escape', Buffer.from('100%0A%25')],
  ['a trailing newline', Buffer.from('end\n')],
  ['UTF-8 text', Buffer.from('répertoire ✓')],
];

describe('directory names with any byte are observed exactly, never a hang (issue 34)', () => {
  const req = (command: string, target = base) => ({ target, tmpDir: '/tmp', command, timeoutMs: 10_000, maxOutputBytes: 1 << 20 });

  it.each(NAMES)('one-shot: a cwd with %s is reported exactly, at once', async (_what, name) => {
    const t0 = performance.now();
    const r = await runOneshot(local, undefined, req(`mkdir -p -- ${bashBytes(name)} && cd -- ${bashBytes(name)}`));
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(r.framingBroken).toBeNull();
    expect(r.killed).toBeNull();
    expect(r.end).toEqual({ exitCode: 0, state: 'ok', cwd: `${base}/${name.toString('utf8')}` });
  });

  it('session shell: a newline cwd is reported, then entered again as the next start dir (S frame exact)', async () => {
    const shell = await SessionShell.open(local, undefined);
    try {
      const name = Buffer.from('sess\nion:%\r');
      const first = await shell.run(req(`mkdir -p -- ${bashBytes(name)} && cd -- ${bashBytes(name)}`));
      const dir = `${base}/${name.toString('utf8')}`;
      expect(first.framingBroken).toBeNull();
      expect(first.end?.cwd).toBe(dir);
      const second = await shell.run(req('printf %s "$PWD"', dir));
      expect(second.start).toMatchObject({ why: 'ok', used: dir });
      expect(second.stdout.toString('utf8')).toBe(dir);
      expect(second.end?.cwd).toBe(dir);
    } finally {
      shell.close();
    }
  });

  it('a 4 KiB path (components of 200 bytes, with newlines) is observed exactly', async () => {
    const part = `${'p'.repeat(98)}\n${'q'.repeat(101)}`;
    const deep = `${base}/${Array.from({ length: 21 }, () => part).join('/')}`;
    // Past PATH_MAX: made one component at a time from inside (mkdir(2) refuses the whole path).
    const r = await runOneshot(
      local,
      undefined,
      req(`p=${bashBytes(Buffer.from(part))}; for ((i = 0; i < 21; i++)); do mkdir -p -- "$p" && cd -- "$p" || exit 9; done`),
    );
    expect(deep.length).toBeGreaterThan(4096);
    expect(r.framingBroken).toBeNull();
    expect(r.end?.cwd).toBe(deep);
  });

  it('a name that is not UTF-8 is explicitly not text: the end frame says so instead of guessing', async () => {
    const name = Buffer.from([0x62, 0xff, 0x0a, 0xfe]);
    const r = await runOneshot(local, undefined, req(`mkdir -p -- ${bashBytes(name)} && cd -- ${bashBytes(name)}`));
    expect(r.framingBroken).toBeNull();
    expect(r.end).toMatchObject({ exitCode: 0, state: 'ok', notUtf8: true });
  });
});

describe('decodeFramePath', () => {
  it('restores %25, %0A, %0D and keeps every other byte', () => {
    expect(decodeFramePath('/a%25b%0Ac%0Dd')).toBe('/a%b\nc\rd');
    expect(decodeFramePath('/100%')).toBe('/100%');
    expect(decodeFramePath(Buffer.from('/é').toString('latin1'))).toBe('/é');
    expect(decodeFramePath(Buffer.from([0x2f, 0xff]).toString('latin1'))).toBeNull();
  });

  it('the splitter keeps a frame body byte for byte', () => {
    const frames: Frame[] = [];
    const s = new FrameSplitter(
      () => undefined,
      (f) => frames.push(f),
    );
    s.expect('NONCE');
    s.push(Buffer.concat([Buffer.from('NONCE:E:0:ok:/x'), Buffer.from([0xff]), Buffer.from(':NONCE\n')]));
    expect(Buffer.from(frames[0]!.fields[3]!, 'latin1')).toEqual(Buffer.from([0x2f, 0x78, 0xff]));
  });
});
