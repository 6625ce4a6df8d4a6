import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, SCHEMA_VERSION } from './database.js';

const made: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sdesk-db-'));
  made.push(d);
  return d;
};
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

const opener = resolve(import.meta.dirname, '../../test/fixtures/db-opener.ts');

function openIn(dir: string, startAt: number): Promise<string> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', opener, dir, String(startAt)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', () => done(out.trim()));
  });
}

describe('schema migrations', () => {
  it('several processes opening one new data dir at once all succeed, and migrate it once', async () => {
    // Each round: 4 processes released at the same instant (after all have loaded) on a fresh dir.
    for (let round = 0; round < 3; round++) {
      const dir = tempDir();
      const startAt = Date.now() + 2500;
      const results = await Promise.all([0, 1, 2, 3].map(() => openIn(dir, startAt)));
      expect(results).toEqual(Array(4).fill(`ok ${SCHEMA_VERSION}`));
    }
  }, 60_000);

  it('a database written by a newer version is refused with what to do, and left as it was', () => {
    const dir = tempDir();
    openDatabase(dir).close();
    const raw = new Database(join(dir, 'state.db'));
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    expect(() => openDatabase(dir)).toThrow(
      new RegExp(
        `state\\.db was written by a newer Sandbox Desk \\(schema version ${SCHEMA_VERSION + 1}; this one knows up to ${SCHEMA_VERSION}\\)`,
      ),
    );
    const again = new Database(join(dir, 'state.db'));
    expect(again.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION + 1);
    again.close();
  });
});
