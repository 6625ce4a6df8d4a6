import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireServiceLock, liveLockHolder, type LockDeps } from './service-lock.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sd-lock-'));
  file = join(dir, 'service.lock');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A fake process table: pid → start time; absent pids are dead. */
function deps(pid: number, table: Record<number, string>): LockDeps {
  return { pid, alive: (p) => p in table, startTime: (p) => table[p] ?? null };
}

describe('acquireServiceLock', () => {
  it('the first takes it with its pid and start time; a second live one is refused and told who holds it', () => {
    const table = { 100: 't100', 200: 't200' };
    const a = acquireServiceLock(file, deps(100, table));
    expect(a.acquired).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ pid: 100, startTime: 't100' });
    const b = acquireServiceLock(file, deps(200, table));
    expect(b).toEqual({ acquired: false, holder: { pid: 100, startTime: 't100' } });
    expect(readdir()).toEqual(['service.lock']);
  });

  it('a lock of a dead pid is stale and taken over', () => {
    writeFileSync(file, JSON.stringify({ pid: 999, startTime: 'old' }));
    const r = acquireServiceLock(file, deps(200, { 200: 't200' }));
    expect(r.acquired).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8')).pid).toBe(200);
  });

  it('a reused pid (alive, another start time) is not the owner', () => {
    writeFileSync(file, JSON.stringify({ pid: 300, startTime: 'before-reboot' }));
    const r = acquireServiceLock(file, deps(200, { 200: 't200', 300: 'now' }));
    expect(r.acquired).toBe(true);
  });

  it('an unreadable lock is stale (a lock is always written whole, so it cannot be one being written)', () => {
    writeFileSync(file, 'garbage');
    expect(acquireServiceLock(file, deps(200, { 200: 't' })).acquired).toBe(true);
  });

  it('release removes only its own lock', () => {
    const table: Record<number, string> = { 100: 'a', 200: 'b' };
    const a = acquireServiceLock(file, deps(100, table));
    if (!a.acquired) throw new Error('expected the lock');
    // Presumed dead, taken over by 200: 100's release must leave 200's lock alone.
    delete table[100];
    expect(acquireServiceLock(file, deps(200, table)).acquired).toBe(true);
    a.release();
    expect(JSON.parse(readFileSync(file, 'utf8')).pid).toBe(200);
  });

  it('liveLockHolder: the live holder, or null for none or a dead one', () => {
    expect(liveLockHolder(file, deps(1, {}))).toBeNull();
    writeFileSync(file, JSON.stringify({ pid: 5, startTime: 's' }));
    expect(liveLockHolder(file, deps(1, { 5: 's' }))).toEqual({ pid: 5, startTime: 's' });
    expect(liveLockHolder(file, deps(1, {}))).toBeNull();
    expect(existsSync(file)).toBe(true);
  });

  it('with the real process table: its own live pid holds; a dead pid does not', () => {
    const r = acquireServiceLock(file);
    expect(r.acquired).toBe(true);
    expect(liveLockHolder(file)?.pid).toBe(process.pid);
    expect(acquireServiceLock(file).acquired).toBe(false);
  });
});

function readdir(): string[] {
  return readdirSync(dir);
}
