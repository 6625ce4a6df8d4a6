import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { followFile, lastLines, readTail } from './file-tail.js';

const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sdesk-file-tail-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Resolves once `got()` holds `want`, polling (no timed assertion: the test's own timeout bounds it). */
async function until(got: () => string, want: string): Promise<void> {
  while (!got().includes(want)) await new Promise((r) => setTimeout(r, 20));
}

describe('lastLines', () => {
  it('keeps the last n lines and the final newline', () => {
    expect(lastLines('a\nb\nc\n', 2)).toBe('b\nc\n');
    expect(lastLines('a\nb\nc', 2)).toBe('b\nc');
    expect(lastLines('a\nb\n', 10)).toBe('a\nb\n');
    expect(lastLines('a\nb\n', 0)).toBe('');
    expect(lastLines('', 5)).toBe('');
  });
  it('drops the partial first line of a cut text', () => {
    expect(lastLines('tial\nwhole\n', 10, true)).toBe('whole\n');
  });
});

describe('readTail', () => {
  it('reads only the end of a big file', () => {
    const f = join(tmp(), 'big.log');
    writeFileSync(f, Array.from({ length: 10_000 }, (_, i) => `line ${i}`).join('\n') + '\n');
    expect(readTail(f, 2)).toBe('line 9998\nline 9999\n');
    expect(readTail(f, 100_000, 64).split('\n')[0]).toMatch(/^line \d+$/);
  });
  it('throws for a file that is not there', () => {
    expect(() => readTail(join(tmp(), 'nope.log'), 5)).toThrow(/ENOENT/);
  });
});

describe('followFile', () => {
  it('sends the tail, then appended lines, then a recreated file from its start', async () => {
    const d = tmp();
    const f = join(d, 'serial.log');
    writeFileSync(f, 'old 1\nold 2\nold 3\n');
    let got = '';
    const sub = followFile(f, { tail: 2, intervalMs: 10 }, (t) => (got += t));
    expect(got).toBe('old 2\nold 3\n');
    appendFileSync(f, 'new line\n');
    await until(() => got, 'new line\n');
    // A new boot replaces the file: followed from its beginning.
    writeFileSync(join(d, 'next'), 'fresh\n');
    renameSync(join(d, 'next'), f);
    await until(() => got, 'fresh\n');
    sub.dispose();
    expect(got).toBe('old 2\nold 3\nnew line\nfresh\n');
  });
  it('waits for a file that does not exist yet', async () => {
    const f = join(tmp(), 'later.log');
    let got = '';
    const sub = followFile(f, { tail: 10, intervalMs: 10 }, (t) => (got += t));
    writeFileSync(f, 'first\n');
    await until(() => got, 'first\n');
    sub.dispose();
  });
  it('keeps a UTF-8 character split across writes whole', async () => {
    const f = join(tmp(), 'utf8.log');
    writeFileSync(f, '');
    let got = '';
    const sub = followFile(f, { tail: 0, intervalMs: 10 }, (t) => (got += t));
    const euro = Buffer.from('€\n');
    appendFileSync(f, euro.subarray(0, 1));
    await new Promise((r) => setTimeout(r, 50));
    appendFileSync(f, euro.subarray(1));
    await until(() => got, '€\n');
    sub.dispose();
    expect(got).toBe('€\n');
  });
});
