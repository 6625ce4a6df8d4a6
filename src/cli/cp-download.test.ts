import { spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { rejectsWith } from '../../test/expect-error.js';
import type { DownloadSource } from '../exec/file-transfer.js';
import { processAlive } from '../platform/process-alive.js';
import { localTarget, partName, receiveDownload, sweepStaleParts } from './cp-download.js';
import type { Out } from './output.js';

const root = mkdtempSync(join(tmpdir(), 'sdesk-cp-download-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const quiet: Out = { stdout: () => undefined, stderr: () => undefined };

/** A download the test feeds by hand: the sandbox boundary, faked. */
function fakeSource(size: number, done: Promise<void> = Promise.resolve()) {
  const output = new PassThrough();
  let aborted = false;
  const src: DownloadSource = {
    path: '/somewhere/the/sandbox/says',
    name: 'ignored',
    size,
    output,
    done,
    abort: () => {
      aborted = true;
    },
  };
  return { src, output, aborted: () => aborted };
}

const parts = (dir: string) => readdirSync(dir).filter((n) => n.includes('.sdesk-part-'));

describe('cp download: where the file goes comes from the arguments', () => {
  it('into a folder under the asked file’s own name, or to the file named', () => {
    const dir = join(root, 'into');
    mkdirSync(dir);
    expect(localTarget('sub/report.txt', dir, 'web')).toEqual({ dir, target: join(dir, 'report.txt'), name: 'report.txt' });
    expect(localTarget('report.txt', join(dir, 'mine.txt'), 'web')).toEqual({ dir, target: join(dir, 'mine.txt'), name: 'mine.txt' });
  });

  it('a missing folder is not_found, named, with what to do (not a raw ENOTDIR from a rename)', () => {
    const missing = join(root, 'nonexist');
    for (const dest of [join(missing, 'x.txt'), `${missing}/`]) {
      const e = (() => {
        try {
          localTarget('report.txt', dest, 'web');
        } catch (err) {
          return err as { code: string; message: string; hint: string };
        }
        throw new Error('expected a refusal');
      })();
      expect(e.code).toBe('not_found');
      expect(e.message).toBe(`the folder ${missing} does not exist on this machine`);
      expect(e.hint).toMatch(/create it first \(mkdir -p .*nonexist"\) or copy into a folder that exists/);
    }
  });

  it('refuses a sandbox path that names no file, a file as the folder, and a folder in the way', () => {
    const dir = join(root, 'refusals');
    mkdirSync(join(dir, 'taken'), { recursive: true });
    writeFileSync(join(dir, 'plain'), 'x');
    for (const asked of ['.', '..', 'sub/', 'a/..']) expect(() => localTarget(asked, dir, 'web')).toThrow(/does not name a file/);
    expect(() => localTarget('report.txt', join(dir, 'plain', 'x'), 'web')).toThrow(/plain is not a folder on this machine/);
    expect(() => localTarget('taken', dir, 'web')).toThrow(/a folder named taken is already in/);
  });

  it('a part file name stays within NAME_MAX however long the name', () => {
    expect(partName('a.txt', 42)).toBe('.a.txt.sdesk-part-42');
    const long = partName('é'.repeat(127), 4_194_304);
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(255);
    expect(long).toMatch(/^\.é+\.sdesk-part-4194304$/);
  });
});

describe('cp download: the bytes', () => {
  it('writes exactly the announced bytes, then renames over the target', async () => {
    const dir = join(root, 'ok');
    mkdirSync(dir);
    const f = fakeSource(6);
    const p = receiveDownload(f.src, { dir, target: join(dir, 'r.txt'), name: 'r.txt' }, quiet);
    f.output.end('report');
    expect(await p).toEqual({ bytes: 6 });
    expect(readFileSync(join(dir, 'r.txt'), 'utf8')).toBe('report');
    expect(parts(dir)).toEqual([]);
  });

  it('a short transfer fails even when the source does not say so; the part is removed, the old target kept', async () => {
    const dir = join(root, 'short');
    mkdirSync(dir);
    writeFileSync(join(dir, 'r.txt'), 'the old content');
    const f = fakeSource(1_000_000);
    const p = receiveDownload(f.src, { dir, target: join(dir, 'r.txt'), name: 'r.txt' }, quiet);
    f.output.end(Buffer.alloc(1000));
    const e = await rejectsWith(p, 'backend_unavailable');
    expect(e.message).toMatch(/r\.txt: 1000 bytes written, 1000000 were announced/);
    expect(readFileSync(join(dir, 'r.txt'), 'utf8')).toBe('the old content');
    expect(parts(dir)).toEqual([]);
  });

  it('a source that fails (the sandbox’s count) removes the part file and says why', async () => {
    const dir = join(root, 'fails');
    mkdirSync(dir);
    const f = fakeSource(10);
    const p = receiveDownload(f.src, { dir, target: join(dir, 'r.txt'), name: 'r.txt' }, quiet);
    f.output.write('12345');
    f.output.destroy(Object.assign(new Error('r.txt changed in the sandbox while it was copied'), { code: 'x' }));
    await expect(p).rejects.toThrow();
    expect(existsSync(join(dir, 'r.txt'))).toBe(false);
    expect(parts(dir)).toEqual([]);
    expect(f.aborted()).toBe(true);
  });

  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    it(`${sig} mid-transfer stops it and removes the part file`, async () => {
      const dir = join(root, `signal-${sig}`);
      mkdirSync(dir);
      const signals = new EventEmitter();
      const said: string[] = [];
      const f = fakeSource(1_000_000);
      const p = receiveDownload(
        f.src,
        { dir, target: join(dir, 'r.txt'), name: 'r.txt' },
        { stdout: () => undefined, stderr: (s) => void said.push(String(s)) },
        signals,
      );
      f.output.write(Buffer.alloc(5000));
      await new Promise((r) => setTimeout(r, 20));
      expect(parts(dir)).toEqual([`.r.txt.sdesk-part-${process.pid}`]);
      signals.emit(sig);
      const e = await rejectsWith(p, 'cancelled');
      expect(e.message).toMatch(/was interrupted; the partial file was removed/);
      expect(said.join('')).toMatch(/cancelling/);
      expect(f.aborted()).toBe(true);
      expect(readdirSync(dir)).toEqual([]);
      expect(signals.listenerCount(sig)).toBe(0);
    });
});

describe('cp download: part files of processes that are gone', () => {
  it('are swept from the folder; a live owner’s, this process’s own and other names are kept', () => {
    const dir = join(root, 'sweep');
    mkdirSync(dir);
    // A PID that was alive and is not any more: a child that has exited and been reaped.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(dead.stdout);
    expect(processAlive(deadPid)).toBe(false);
    const keep = [`.a.sdesk-part-${process.pid}`, `.b.sdesk-part-1`, 'c.txt', `.d.sdesk-part-x${deadPid}`];
    for (const n of [...keep, `.gone.txt.sdesk-part-${deadPid}`, `.multi\nline.sdesk-part-${deadPid}`]) writeFileSync(join(dir, n), 'x');
    mkdirSync(join(dir, `.folder.sdesk-part-${deadPid}`));
    expect(sweepStaleParts(dir).sort()).toEqual([`.gone.txt.sdesk-part-${deadPid}`, `.multi\nline.sdesk-part-${deadPid}`].sort());
    expect(readdirSync(dir).sort()).toEqual([...keep, `.folder.sdesk-part-${deadPid}`].sort());
  });

  it('the next download into the folder sweeps them', async () => {
    const dir = join(root, 'sweep-next');
    mkdirSync(dir);
    writeFileSync(join(dir, '.old.bin.sdesk-part-999999999'), 'left by a killed cp');
    const f = fakeSource(2);
    const p = receiveDownload(f.src, { dir, target: join(dir, 'new.bin'), name: 'new.bin' }, quiet);
    f.output.end('ok');
    await p;
    expect(readdirSync(dir)).toEqual(['new.bin']);
  });
});
