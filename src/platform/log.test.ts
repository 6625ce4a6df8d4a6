import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openLog, RotatingFile } from './log.js';

const made: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sdesk-log-'));
  made.push(d);
  return d;
};
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

const lines = (f: string): Record<string, unknown>[] =>
  readFileSync(f, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('the log', () => {
  it("writes JSON lines with level, time, pid, component and the caller's fields, at the chosen level", () => {
    const file = join(tempDir(), 'logs', 'sandbox-desk.log');
    const log = openLog({ file, level: 'info', maxBytes: 1 << 20, files: 2, component: 'cli' });
    log.logger.debug('hidden');
    log.logger.child({ plugin: 'ssh' }).warn('careful');
    log.dispose();
    const got = lines(file);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ level: 40, pid: process.pid, component: 'cli', plugin: 'ssh', msg: 'careful' });
    expect(typeof got[0]!.time).toBe('string');
  });

  it('rotates by size, keeping the configured number of old files', () => {
    const dir = tempDir();
    const file = join(dir, 'a.log');
    const f = new RotatingFile(file, { maxBytes: 100, files: 2 });
    for (let i = 0; i < 10; i++) f.write(`line ${i} ${'x'.repeat(40)}\n`);
    f.dispose();
    expect(readdirSync(dir).sort()).toEqual(['a.log', 'a.log.1', 'a.log.2']);
    expect(readFileSync(file, 'utf8')).toMatch(/^line 8 .*\nline 9 /);
    expect(readFileSync(`${file}.1`, 'utf8')).toMatch(/^line 6 .*\nline 7 /);
    expect(readFileSync(`${file}.2`, 'utf8')).toMatch(/^line 4 /);
    // Every file stays under the limit; a single line larger than it still gets written.
    for (const n of readdirSync(dir)) expect(readFileSync(join(dir, n)).length).toBeLessThanOrEqual(100);
  });

  it('a file rotated by another process is reopened, not written into the old one', () => {
    const dir = tempDir();
    const file = join(dir, 'b.log');
    const one = new RotatingFile(file, { maxBytes: 60, files: 3 });
    const two = new RotatingFile(file, { maxBytes: 60, files: 3 });
    one.write('one first\n');
    two.write('two first\n');
    one.write(`${'y'.repeat(45)}\n`); // rotates: b.log → b.log.1
    two.write('two after\n');
    one.dispose();
    two.dispose();
    expect(existsSync(`${file}.1`)).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(`${'y'.repeat(45)}\ntwo after\n`);
  });
});
