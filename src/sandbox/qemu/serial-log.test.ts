import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serialSize, serialTail } from './serial-log.js';

const dir = mkdtempSync(join(tmpdir(), 'sdesk-serial-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('serialTail', () => {
  it('keeps the last lines, without colour codes, carriage returns or blank lines', () => {
    const p = join(dir, 'a.log');
    writeFileSync(p, 'one\r\n\r\n[\x1b[0;32m  OK  \x1b[0m] Started ssh\r\ntwo\r\nthree\n');
    expect(serialTail(p, 3)).toBe('[  OK  ] Started ssh\ntwo\nthree');
  });

  it('says so when there is nothing to quote', () => {
    expect(serialTail(join(dir, 'missing.log'))).toBe('(no serial output)');
    writeFileSync(join(dir, 'empty.log'), '');
    expect(serialTail(join(dir, 'empty.log'))).toBe('(no serial output)');
    expect(serialSize(join(dir, 'missing.log'))).toBe(0);
  });
});
