import { mkdtempSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Emitter } from '../shared/lifecycle.js';
import { castProblems, clipCast, parseCast, readCastInfo } from './cast-file.js';
import { recordTerminal, type CastSource } from './terminal-cast.js';

const root = mkdtempSync(join(tmpdir(), 'sdesk-cast-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

class FakeTerminal implements CastSource {
  readonly out = new Emitter<string>();
  readonly size = new Emitter<{ cols: number; rows: number }>();
  readonly exit = new Emitter<unknown>();
  readonly onOutput = this.out.event;
  readonly onResize = this.size.event;
  readonly onExit = this.exit.event;
  cols = 80;
  rows = 24;
  constructor(readonly id: string) {}
}

/** A clock the test moves. */
function clock(startMs: number) {
  let now = startMs;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('terminal recording (asciicast v2)', () => {
  it('writes the header, output and resizes as valid asciicast v2 lines with monotonic times', () => {
    const t = new FakeTerminal('aa01');
    const c = clock(1_700_000_000_250);
    const file = join(root, 'rec1', 'terminals', 'aa01.cast');
    const w = recordTerminal(t, { file, sandbox: 'box', session: 'default', now: c.now });
    c.advance(500);
    t.out.fire('$ echo hi\r\n');
    c.advance(10);
    t.out.fire('hi\r\n\u001b[1m$ \u001b[0m');
    c.advance(5);
    t.size.fire({ cols: 100, rows: 30 });
    // Written incrementally: the file is valid before the terminal ends.
    const text = readFileSync(file, 'utf8');
    expect(castProblems(text)).toEqual([]);
    const cast = parseCast(text)!;
    expect(cast.header).toMatchObject({ version: 2, width: 80, height: 24, timestamp: 1_700_000_000, title: 'box · default' });
    expect(cast.header.env).toMatchObject({ TERM: 'xterm-256color', SANDBOX_DESK_SESSION: 'default' });
    expect(cast.events).toEqual([
      [0.75, 'o', '$ echo hi\r\n'],
      [0.76, 'o', 'hi\r\n\u001b[1m$ \u001b[0m'],
      [0.765, 'r', '100x30'],
    ]);
    t.exit.fire({});
    expect(w.open).toBe(false);
    t.out.fire('after the end');
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(readCastInfo(file)).toMatchObject({ startMs: 1_700_000_000_000, endMs: 1_700_000_000_765, bytes: Buffer.byteLength(text) });
  });

  it('keeps times monotonic when the wall clock steps back', () => {
    const t = new FakeTerminal('aa02');
    const c = clock(1_700_000_000_000);
    const file = join(root, 'rec2', 'aa02.cast');
    recordTerminal(t, { file, sandbox: 'box', session: 's', now: c.now });
    c.advance(1000);
    t.out.fire('a');
    c.advance(-600);
    t.out.fire('b');
    expect(castProblems(readFileSync(file, 'utf8'))).toEqual([]);
  });

  it('a full disk stops the recording with a warning, leaves whole lines only, and the terminal goes on', () => {
    const t = new FakeTerminal('aa03');
    const file = join(root, 'rec3', 'aa03.cast');
    const warnings: string[] = [];
    let writes = 0;
    const w = recordTerminal(t, {
      file,
      sandbox: 'box',
      session: 's',
      onWarning: (m) => warnings.push(m),
      // The third line fails halfway, as a write on a full disk does.
      write: (fd, text) => {
        if (++writes === 3) {
          writeSync(fd, text.slice(0, 5));
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        }
        writeSync(fd, text);
      },
    });
    t.out.fire('one');
    t.out.fire('two');
    t.out.fire('three');
    expect(w.stopped).toBe('disk full (ENOSPC)');
    expect(warnings).toEqual(['terminal aa03 recording stopped: disk full (ENOSPC); the terminal keeps working']);
    const text = readFileSync(file, 'utf8');
    expect(castProblems(text)).toEqual([]);
    expect(parseCast(text)!.events.map((e) => e[2])).toEqual(['one']);
  });

  it('a cast that cannot be written at all (/dev/full) warns once and records nothing', () => {
    const t = new FakeTerminal('aa04');
    const warnings: string[] = [];
    const w = recordTerminal(t, { file: '/dev/full', sandbox: 'box', session: 's', onWarning: (m) => warnings.push(m) });
    t.out.fire('x');
    expect(w.open).toBe(false);
    expect(warnings).toEqual(['terminal aa04 recording stopped: disk full (ENOSPC); the terminal keeps working']);
  });

  it('a line cut by a crash is skipped: the rest reads', () => {
    const text = '{"version":2,"width":80,"height":24,"timestamp":100}\n[0.5,"o","a"]\n[0.7,"o","b';
    expect(parseCast(text)!.events).toEqual([[0.5, 'o', 'a']]);
    expect(castProblems(text)).toEqual(['line 3: not JSON']);
  });

  it('clips a range and rebases its times; the header takes the size in force at the start', () => {
    const cast = parseCast(
      [
        '{"version":2,"width":80,"height":24,"timestamp":100}',
        '[1,"o","early"]',
        '[2,"r","120x40"]',
        '[3.5,"o","in"]',
        '[4.25,"o","also in"]',
        '[9,"o","late"]',
      ].join('\n'),
    )!;
    const clipped = clipCast(cast, 103_000, 105_000)!;
    expect(castProblems(clipped)).toEqual([]);
    const out = parseCast(clipped)!;
    expect(out.header).toMatchObject({ width: 120, height: 40, timestamp: 103 });
    expect(out.events).toEqual([
      [0.5, 'o', 'in'],
      [1.25, 'o', 'also in'],
    ]);
    expect(clipCast(cast, 200_000, 300_000)).toBeNull();
  });

  it('castProblems names what the spec forbids', () => {
    expect(castProblems('{"version":1,"width":80}\n[1,"o","a"]\n[0.5,"o","b"]\n[2,"r","big"]\n')).toEqual([
      'header: version is not 2',
      'header: height is not a positive integer',
      'line 3: time 0.5 goes back (previous 1)',
      'line 4: resize data big is not COLSxROWS',
    ]);
  });
});
