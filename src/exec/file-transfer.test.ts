import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { rejectsWith } from '../../test/expect-error.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import {
  checkUpload,
  firstRecord,
  makeSandboxDirectory,
  startDownload,
  startUpload,
  writeSandboxFile,
  type DownloadSource,
} from './file-transfer.js';
import type { FileTarget } from './sandbox-files.js';

/** The sandbox boundary faked as this machine: the exec prefix is `env`, so the scripts run here. */
const root = mkdtempSync(join(tmpdir(), 'sdesk-transfer-'));
const env = { execPrefix: () => ['env'], joinsArgv: false, getTempDir: () => tmpdir() } as unknown as SandboxEnvironment;
const t: FileTarget = { env, cwd: root };
afterAll(() => rmSync(root, { recursive: true, force: true }));

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('file transfer scripts', () => {
  it('uploads into the session cwd under a temporary name, then renames', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const sink = await startUpload(t, { dir: '.', name: 'big file.bin', size: bytes.length });
    expect(sink.path).toBe(join(root, 'big file.bin'));
    // Once the sandbox is ready for the bytes, only the temporary name is there.
    const src = new PassThrough();
    const piping = pipeline(src, sink.input);
    src.write(bytes.subarray(0, 1000));
    expect(readdirSync(root).some((n) => n.startsWith('.sdesk-upload-'))).toBe(true);
    expect(readdirSync(root)).not.toContain('big file.bin');
    src.end(bytes.subarray(1000));
    await piping;
    expect(await sink.done).toEqual({ path: join(root, 'big file.bin'), bytes: bytes.length });
    expect(sha(readFileSync(join(root, 'big file.bin')))).toBe(sha(bytes));
    expect(readdirSync(root).filter((n) => n.startsWith('.sdesk-upload-'))).toEqual([]);
  });

  it('an upload cut short leaves nothing under the final name (and no temporary file)', async () => {
    const sink = await startUpload(t, { dir: root, name: 'cut.bin', size: 1000 });
    sink.input.end(Buffer.alloc(400));
    const e = await rejectsWith(sink.done, 'invalid_input');
    expect(e.message).toMatch(/ended after 400 of 1000 bytes/);
    expect(readdirSync(root).filter((n) => n === 'cut.bin' || n.startsWith('.sdesk-upload-'))).toEqual([]);
  });

  it('refuses a file larger than the free space before any byte is sent', async () => {
    const huge = 2 ** 52;
    const e = await rejectsWith(checkUpload(t, { dir: '.', name: 'huge.bin', size: huge }), 'no_space');
    expect(e.message).toMatch(/needs 4503599627370496 bytes, \d+ are free/);
    expect(e.hint).toMatch(/nothing was written/);
    await rejectsWith(startUpload(t, { dir: '.', name: 'huge.bin', size: huge }), 'no_space');
    expect(readdirSync(root)).not.toContain('huge.bin');
  });

  it('refuses bad names, a missing folder, a folder in the way, and a file as the folder', async () => {
    await rejectsWith(checkUpload(t, { dir: '.', name: 'a/b', size: 1 }), 'invalid_input');
    await rejectsWith(checkUpload(t, { dir: '.', name: 'a\0b', size: 1 }), 'invalid_input');
    await rejectsWith(checkUpload(t, { dir: 'nope', name: 'x', size: 1 }), 'not_found');
    mkdirSync(join(root, 'taken'));
    expect((await rejectsWith(checkUpload(t, { dir: '.', name: 'taken', size: 1 }), 'invalid_input')).message).toMatch(
      /a folder named taken/,
    );
    writeFileSync(join(root, 'plain'), 'x');
    await rejectsWith(checkUpload(t, { dir: 'plain', name: 'x', size: 1 }), 'invalid_input');
    expect((await checkUpload(t, { dir: 'taken', name: 'ok', size: 1 })).path).toBe(join(root, 'taken', 'ok'));
  });

  it('downloads with the size first, byte for byte', async () => {
    const bytes = randomBytes(2 * 1024 * 1024 + 5);
    writeFileSync(join(root, 'down.bin'), bytes);
    const src = await startDownload(t, 'down.bin');
    expect(src).toMatchObject({ path: join(root, 'down.bin'), name: 'down.bin', size: bytes.length });
    const parts: Buffer[] = [];
    for await (const c of src.output) parts.push(c as Buffer);
    await src.done;
    expect(sha(Buffer.concat(parts))).toBe(sha(bytes));
    await rejectsWith(startDownload(t, 'missing.bin'), 'not_found');
    await rejectsWith(startDownload(t, '.'), 'invalid_input');
  });

  it('makes a folder; an existing name is name_taken; a bad name is refused', async () => {
    expect(await makeSandboxDirectory(t, '.', 'new dir')).toEqual({ path: join(root, 'new dir') });
    await rejectsWith(makeSandboxDirectory(t, '.', 'new dir'), 'name_taken');
    await rejectsWith(makeSandboxDirectory(t, '.', '..'), 'invalid_input');
  });

  it('firstRecord ends at the first NUL (a newline is part of the record) and puts back what follows', async () => {
    const s = new PassThrough();
    s.write('head\nline\0pay');
    s.end('load\0');
    expect(await firstRecord(s)).toBe('head\nline');
    const rest: Buffer[] = [];
    for await (const c of s) rest.push(c as Buffer);
    expect(Buffer.concat(rest).toString()).toBe('payload\0');
  });
});

/** Everything a download's output carries, and how `done` settles. */
async function drain(src: DownloadSource): Promise<{ bytes: Buffer; error: unknown }> {
  const parts: Buffer[] = [];
  let error: unknown = null;
  try {
    for await (const c of src.output) parts.push(c as Buffer);
  } catch (err) {
    error = err;
  }
  await src.done.catch((err: unknown) => (error ??= err));
  return { bytes: Buffer.concat(parts), error };
}

describe('what the sandbox sends is a claim (issue 35)', () => {
  it('a session cwd with a newline in its name cannot choose the name or pass a header off as content', async () => {
    // The two folder names from the issue: a newline then a shell line, and `..` then a newline.
    for (const dir of ['.profile\necho PWNED;:', '..\nzz']) {
      const cwd = join(root, `hostile-${dir.length}`, dir);
      mkdirSync(cwd, { recursive: true });
      writeFileSync(join(cwd, 'report.txt'), 'the report\n');
      const src = await startDownload({ env, cwd }, 'report.txt');
      expect(src.name).toBe('report.txt');
      expect(src.path).toBe(join(cwd, 'report.txt'));
      expect(src.size).toBe(11);
      const got = await drain(src);
      expect(got.error).toBeNull();
      expect(got.bytes.toString()).toBe('the report\n');
    }
  });

  // The sandbox's own `cat`, replaced (it is root there): it shrinks or grows the file after its size
  // was announced, as a writer in the sandbox would mid-transfer — here at a deterministic moment.
  const bin = mkdtempSync(join(tmpdir(), 'sdesk-transfer-bin-'));
  afterAll(() => rmSync(bin, { recursive: true, force: true }));
  writeFileSync(
    join(bin, 'cat'),
    '#!/bin/sh\ncase "$2" in *shrinks*) truncate -s 1000 -- "$2" ;; *grows*) printf extra >> "$2" ;; esac\nexec /bin/cat "$@"\n',
  );
  chmodSync(join(bin, 'cat'), 0o755);
  const changing: FileTarget = {
    env: { ...env, execPrefix: () => ['env', `PATH=${bin}:${process.env.PATH}`] },
    cwd: root,
  };

  it('a file truncated after its size was announced fails the download (it does not look complete)', async () => {
    writeFileSync(join(root, 'shrinks.bin'), randomBytes(300_000));
    const src = await startDownload(changing, 'shrinks.bin');
    expect(src.size).toBe(300_000);
    const got = await drain(src);
    expect(got.bytes.length).toBe(1000);
    expect(got.error).toMatchObject({ code: 'backend_unavailable' });
    expect(String(got.error)).toMatch(/shrinks\.bin changed in the sandbox while it was copied: 300000 bytes were announced, 1000 arrived/);
  });

  it('a file that grew after its size was announced fails at the first byte past it', async () => {
    writeFileSync(join(root, 'grows.bin'), randomBytes(5000));
    const src = await startDownload(changing, 'grows.bin');
    expect(src.size).toBe(5000);
    const got = await drain(src);
    expect(got.bytes.length).toBeLessThanOrEqual(5000);
    expect(String(got.error)).toMatch(
      /grows\.bin changed in the sandbox while it was copied: 5000 bytes were announced, more than 5000 arrived/,
    );
  });
});

describe('writeSandboxFile (write_file)', () => {
  /**
   * A disk that fills while the bytes are written, faked at the boundary: a `cat` first on PATH that
   * writes 100 bytes of what it is given, then fails as cat does on a full disk.
   */
  const shims = mkdtempSync(join(tmpdir(), 'sdesk-fullcat-'));
  writeFileSync(join(shims, 'cat'), "#!/bin/sh\nhead -c 100\necho 'cat: write error: No space left on device' >&2\nexit 1\n", {
    mode: 0o755,
  });
  const fullEnv = {
    execPrefix: () => ['env', `PATH=${shims}:${process.env.PATH}`],
    joinsArgv: false,
    getTempDir: () => tmpdir(),
  } as unknown as SandboxEnvironment;
  const full: FileTarget = { env: fullEnv, cwd: root };
  afterAll(() => rmSync(shims, { recursive: true, force: true }));
  const uploads = () => readdirSync(root).filter((n) => n.startsWith('.sdesk-upload-'));

  it('replaces a file whole, keeping its permission bits; through a link, the file it names', async () => {
    writeFileSync(join(root, 'run.sh'), 'old');
    chmodSync(join(root, 'run.sh'), 0o750);
    expect(await writeSandboxFile(t, 'run.sh', Buffer.from('#!/bin/sh\n'))).toEqual({ path: join(root, 'run.sh'), bytes: 10 });
    expect(readFileSync(join(root, 'run.sh'), 'utf8')).toBe('#!/bin/sh\n');
    expect(statSync(join(root, 'run.sh')).mode & 0o777).toBe(0o750);
    symlinkSync('run.sh', join(root, 'link.sh'));
    expect((await writeSandboxFile(t, 'link.sh', Buffer.from('via link'))).path).toBe(join(root, 'run.sh'));
    expect(readFileSync(join(root, 'run.sh'), 'utf8')).toBe('via link');
    expect(uploads()).toEqual([]);
  });

  it('a disk that fills mid-write: no_space with the free space, the old file untouched, no partial file', async () => {
    writeFileSync(join(root, 'keep.txt'), 'the old content');
    const e = await rejectsWith(writeSandboxFile(full, 'keep.txt', Buffer.alloc(5000, 120)), 'no_space');
    expect(e.message).toMatch(/ran out of space while writing keep\.txt into .* \(\d+ bytes are free\); the old keep\.txt is untouched/);
    expect(e.hint).toMatch(/partial file was removed/);
    expect(readFileSync(join(root, 'keep.txt'), 'utf8')).toBe('the old content');
    expect(uploads()).toEqual([]);
    // A new file: no_space too, and nothing under its name.
    await rejectsWith(writeSandboxFile(full, 'new.txt', Buffer.alloc(5000, 120)), 'no_space');
    expect(readdirSync(root)).not.toContain('new.txt');
  });

  it('a chunk appended onto a full disk is cut off again: the file keeps the bytes it had', async () => {
    writeFileSync(join(root, 'chunks.bin'), Buffer.alloc(300, 1));
    const e = await rejectsWith(writeSandboxFile(full, 'chunks.bin', Buffer.alloc(5000, 2), 300), 'no_space');
    expect(e.message).toMatch(/it is back to its 300 bytes/);
    expect(e.hint).toMatch(/again at offset 300/);
    expect(readFileSync(join(root, 'chunks.bin'))).toEqual(Buffer.alloc(300, 1));
    expect((await writeSandboxFile(t, 'chunks.bin', Buffer.alloc(10, 2), 300)).bytes).toBe(10);
    expect(statSync(join(root, 'chunks.bin')).size).toBe(310);
  });

  it('says what is wrong with the name: too long, a folder, not a regular file', async () => {
    const long = await rejectsWith(writeSandboxFile(t, 'x'.repeat(300), Buffer.from('x')), 'invalid_input');
    expect(long.message).toMatch(/300 bytes long \(at most 255\)/);
    expect(long.hint).toMatch(/shorter name/);
    expect((await rejectsWith(writeSandboxFile(t, 'dir/', Buffer.from('x')), 'invalid_input')).message).toMatch(/names a folder/);
    expect((await rejectsWith(writeSandboxFile(t, '.', Buffer.from('x')), 'invalid_input')).message).toMatch(/not a file name/);
    symlinkSync('/dev/null', join(root, 'null-link'));
    expect((await rejectsWith(writeSandboxFile(t, 'null-link', Buffer.from('x')), 'invalid_input')).message).toMatch(/not a regular file/);
    expect(uploads()).toEqual([]);
  });
});
