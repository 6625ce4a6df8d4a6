import { mkdtempSync, readdirSync, readlinkSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NetworkLogEntry } from '../../shared/network-policy.js';
import { LOG_MAX_BYTES, LogAppender, logFileOf, olderOf, readLog } from './network-files.js';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'sd-netfiles-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

const entry = (sandbox: string, host: string): NetworkLogEntry => ({
  at: new Date().toISOString(),
  sandbox,
  host,
  port: 80,
  verdict: 'allowed',
  kind: 'http',
  reason: null,
  process: null,
});

/** The descriptors of this process open on files under `dir`. */
function openUnder(dir: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)) n++;
    } catch {
      // closed while listed
    }
  }
  return n;
}

describe('LogAppender', () => {
  it('appends lines that readLog returns in order', () => {
    const logs = new LogAppender(dataDir);
    for (const h of ['a.test', 'b.test', 'c.test']) logs.append(entry('sb', h));
    expect(readLog(dataDir, 'sb').map((e) => e.host)).toEqual(['a.test', 'b.test', 'c.test']);
    logs.close();
  });

  it('starts a new file when its file was removed (a sandbox removed and made again under its name)', () => {
    const logs = new LogAppender(dataDir);
    logs.append(entry('sb', 'before.test'));
    rmSync(logFileOf(dataDir, 'sb'));
    logs.append(entry('sb', 'after.test'));
    expect(readLog(dataDir, 'sb').map((e) => e.host)).toEqual(['after.test']);
    logs.close();
  });

  it('writes to the file now in place when it was replaced', () => {
    const logs = new LogAppender(dataDir);
    logs.append(entry('sb', 'one.test'));
    const file = logFileOf(dataDir, 'sb');
    writeFileSync(`${file}.new`, '');
    renameSync(`${file}.new`, file);
    logs.append(entry('sb', 'two.test'));
    expect(readLog(dataDir, 'sb').map((e) => e.host)).toEqual(['two.test']);
    logs.close();
  });

  it('past LOG_MAX_BYTES the file becomes the older half and a new one starts; nothing is lost across the turn', () => {
    const logs = new LogAppender(dataDir);
    const file = logFileOf(dataDir, 'sb');
    let i = 0;
    while ((statSync(file, { throwIfNoEntry: false })?.size ?? 0) <= LOG_MAX_BYTES) logs.append(entry('sb', `h${i++}.test`));
    logs.append(entry('sb', 'turned.test'));
    expect(statSync(olderOf(file)).size).toBeGreaterThan(LOG_MAX_BYTES);
    expect(statSync(file).size).toBeLessThan(1000);
    const all = readLog(dataDir, 'sb', 100_000).map((e) => e.host);
    expect(all.at(-1)).toBe('turned.test');
    expect(all).toHaveLength(i + 1);
    logs.close();
  });

  it('keeps a bounded number of files open, and close() closes them all', () => {
    const logs = new LogAppender(dataDir);
    for (let s = 0; s < 40; s++) logs.append(entry(`sb${s}`, 'x.test'));
    const open = openUnder(join(dataDir, 'network', 'logs'));
    expect(open).toBeGreaterThan(0);
    expect(open).toBeLessThanOrEqual(32);
    // The least recently written were closed; appending to one of them again still works.
    logs.append(entry('sb0', 'again.test'));
    expect(readLog(dataDir, 'sb0').map((e) => e.host)).toEqual(['x.test', 'again.test']);
    logs.close();
    expect(openUnder(join(dataDir, 'network', 'logs'))).toBe(0);
  });
});
