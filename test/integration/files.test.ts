/**
 * Files in and out of a real Docker sandbox through the local server: ticketed, streamed uploads and
 * downloads (byte-identical), the file panel's listing and new folder, and the refusals the issue
 * names — a file bigger than the free space (checked against a real 1 MiB tmpfs), names with `/` or
 * NUL, an upload cut short — each leaving nothing under the final name.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalServer } from '../../src/api/local-server.js';
import { checkUpload, startUpload } from '../../src/exec/file-transfer.js';
import type { SandboxEnvironment } from '../../src/sandbox/provider.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

/** The fields of the file methods' results these tests read (each method fills some). */
interface Ok {
  url: string;
  path: string;
  cwd: string;
  name: string;
  size: number;
  entries: Array<{ name: string; type: string; size: number }>;
}

const execFileP = promisify(execFile);
const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('files: upload, download, list, new folder (real Docker)', () => {
  let t: TestDesk;
  let server: LocalServer;
  const sb = uniqueName('files');
  const call = async (method: string, params: unknown) => {
    const res = await fetch(`${server.origin}/api/call/${method}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${server.token}` },
      body: JSON.stringify({ sandbox: sb, ...(params as object) }),
    });
    return { status: res.status, body: (await res.json()) as { ok: Ok; error?: { code: string; message: string; hint?: string } } };
  };
  const names = async (path?: string) => (await call('listFiles', path ? { path } : {})).body.ok.entries.map((e) => e.name);

  beforeAll(async () => {
    t = tempDesk();
    server = new LocalServer({ desk: t.desk });
    await server.listen();
    await t.desk.createSandbox({ name: sb, backend: 'docker' });
  }, 240_000);
  afterAll(async () => {
    await server.close();
    await t.dispose();
  }, 120_000);

  it('uploads several MiB into the session cwd (streamed), readable in the sandbox, and downloads it byte-identical', async () => {
    const events: unknown[] = [];
    const sub = t.desk.events.onEvent((e) => events.push(e));
    const bytes = randomBytes(6 * 1024 * 1024 + 123);
    const grant = await call('fileUploadTicket', { name: 'blob one.bin', size: bytes.length });
    expect(grant.status).toBe(200);
    const cwd = grant.body.ok.cwd;
    expect(grant.body.ok.path).toBe(`${cwd}/blob one.bin`);
    const put = await fetch(grant.body.ok.url, { method: 'PUT', body: bytes });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ ok: { path: `${cwd}/blob one.bin`, bytes: bytes.length, name: 'blob one.bin' } });
    // Read in the sandbox by a command of the same session.
    sub.dispose();
    expect(events).toContainEqual(
      expect.objectContaining({ topic: 'files', sandbox: sb, path: `${cwd}/blob one.bin`, reason: 'uploaded' }),
    );
    const inside = await t.desk.exec({ sandbox: sb, command: "sha256sum 'blob one.bin' | cut -d' ' -f1" });
    expect(inside.stdout.trim()).toBe(sha(bytes));

    const down = await call('fileDownloadTicket', { path: 'blob one.bin' });
    expect(down.body.ok).toMatchObject({ path: `${cwd}/blob one.bin`, name: 'blob one.bin', size: bytes.length });
    const got = await fetch(down.body.ok.url);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-length')).toBe(String(bytes.length));
    expect(got.headers.get('content-disposition')).toBe(`attachment; filename="blob one.bin"; filename*=UTF-8''blob%20one.bin`);
    expect(sha(Buffer.from(await got.arrayBuffer()))).toBe(sha(bytes));
    // Single use: the same ticket again is refused.
    expect((await fetch(down.body.ok.url)).status).toBe(409);
    expect((await names()).filter((n) => n.startsWith('.sdesk-upload-'))).toEqual([]);
  }, 120_000);

  it('lists the session cwd and makes a folder; an existing name is name_taken', async () => {
    const made = await call('makeDirectory', { name: 'new folder' });
    expect(made.status).toBe(200);
    expect(made.body.ok.path).toMatch(/\/new folder$/);
    const listing = (await call('listFiles', {})).body.ok;
    expect(listing.path).toBe(listing.cwd);
    expect(listing.entries).toEqual(expect.arrayContaining([{ name: 'new folder', type: 'dir', size: expect.any(Number) }]));
    expect((await call('makeDirectory', { name: 'new folder' })).body.error?.code).toBe('name_taken');
    // Upload into it by a relative folder.
    const grant = await call('fileUploadTicket', { dir: 'new folder', name: 'inner.txt', size: 5 });
    expect((await fetch(grant.body.ok.url, { method: 'PUT', body: 'hello' })).status).toBe(200);
    expect(await names('new folder')).toEqual(['inner.txt']);
  }, 60_000);

  it('refuses names with / or NUL, and .. as a folder name', async () => {
    for (const name of ['a/b', 'x\0y', '../up']) {
      const r = await call('fileUploadTicket', { name, size: 1 });
      expect(r.status).toBe(400);
      expect(r.body.error?.message).toMatch(/bad file name/);
    }
    expect((await call('makeDirectory', { name: '..' })).body.error?.message).toMatch(/bad folder name: \.\. is not a file name/);
  }, 60_000);

  it('refuses a file bigger than the free space: no_space (507) before any byte moves', async () => {
    const r = await call('fileUploadTicket', { name: 'huge.bin', size: 2 ** 50 });
    expect(r.status).toBe(507);
    expect(r.body.error).toMatchObject({ code: 'no_space', message: expect.stringMatching(/needs 1125899906842624 bytes, \d+ are free/) });
    expect(await names()).not.toContain('huge.bin');
  }, 60_000);

  it('a body of another length, a cut-off upload and a reused ticket leave nothing under the final name', async () => {
    const short = await call('fileUploadTicket', { name: 'short.bin', size: 100 });
    const put = await fetch(short.body.ok.url, { method: 'PUT', body: Buffer.alloc(50) });
    expect(put.status).toBe(400);
    expect(((await put.json()) as { error: { message: string } }).error.message).toMatch(/50 bytes, the ticket is for 100/);
    expect((await fetch(short.body.ok.url, { method: 'PUT', body: Buffer.alloc(100) })).status).toBe(409);

    // No ticket, or a page of another origin: refused before anything runs in the sandbox.
    expect((await fetch(`${server.origin}/files/upload`, { method: 'PUT', body: 'x' })).status).toBe(409);
    const fresh = await call('fileUploadTicket', { name: 'evil.bin', size: 1 });
    expect((await fetch(fresh.body.ok.url, { method: 'PUT', body: 'x', headers: { Origin: 'https://evil.example' } })).status).toBe(403);
    expect(await names()).not.toContain('evil.bin');

    // The client goes away after 1 of 4 MiB: the script sees the input end early and removes its file.
    const cut = await call('fileUploadTicket', { name: 'cut.bin', size: 4 * 1024 * 1024 });
    await new Promise<void>((resolve) => {
      const req = request(cut.body.ok.url, { method: 'PUT', headers: { 'Content-Length': String(4 * 1024 * 1024) } });
      req.on('error', () => resolve());
      req.write(Buffer.alloc(1024 * 1024), () => {
        req.destroy();
        resolve();
      });
    });
    // Until the sandbox has noticed, a temporary name may be there (the script may even start after the
    // client left); never the final one. Settled = three listings in a row without a temporary name.
    for (let i = 0, clean = 0; i < 150 && clean < 3; i++) {
      const now = await names();
      expect(now).not.toContain('cut.bin');
      clean = now.some((n) => n.startsWith('.sdesk-upload-')) ? 0 : clean + 1;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect((await names()).filter((n) => n === 'cut.bin' || n.startsWith('.sdesk-upload-'))).toEqual([]);
  }, 90_000);
});

describe('files: sandbox-desk cp (real Docker, another process)', () => {
  let t: TestDesk;
  const sb = uniqueName('cp');
  const local = mkdtempSync(join(tmpdir(), 'sdesk-cp-'));
  const cli = (...args: string[]) =>
    execFileP(process.execPath, [BIN, ...args], { env: { ...process.env, SANDBOX_DESK_HOME: t.dataDir }, encoding: 'utf8' });
  beforeAll(async () => {
    t = tempDesk();
    await t.desk.createSandbox({ name: sb, backend: 'docker' });
  }, 240_000);
  afterAll(async () => {
    rmSync(local, { recursive: true, force: true });
    await t.dispose();
  }, 120_000);

  it('copies a file in (into the cwd, under its name) and back out byte-identical; a missing folder is refused', async () => {
    const bytes = randomBytes(2 * 1024 * 1024 + 1);
    writeFileSync(join(local, 'in.bin'), bytes);
    const put = await cli('cp', join(local, 'in.bin'), `${sb}:`, '--json');
    expect(JSON.parse(put.stdout)).toMatchObject({ path: expect.stringMatching(/\/in\.bin$/), bytes: bytes.length });
    await cli('cp', `${sb}:in.bin`, join(local, 'back.bin'));
    expect(sha(readFileSync(join(local, 'back.bin')))).toBe(sha(bytes));
    const bad = await cli('cp', join(local, 'in.bin'), `${sb}:nope/`).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 125, stderr: expect.stringMatching(/does not exist/) });
  }, 120_000);
});

describe('files: a real 1 MiB tmpfs in a container the test made', () => {
  const name = uniqueName('sdesk-tmpfs');
  let env: SandboxEnvironment;
  beforeAll(() => {
    execFileSync('docker', [
      'run',
      '-d',
      '--rm',
      '--name',
      name,
      '--tmpfs',
      '/small:size=1m,mode=1777',
      'sandbox-desk/base:latest',
      'sleep',
      'infinity',
    ]);
    env = {
      execPrefix: () => ['docker', 'exec', '-i', '-u', 'agent', name],
      getTempDir: () => '/tmp',
    } as unknown as SandboxEnvironment;
  }, 120_000);
  afterAll(() => {
    execFileSync('docker', ['rm', '-f', name], { stdio: 'ignore' });
  });
  const ls = () => execFileSync('docker', ['exec', name, 'ls', '-A', '/small']).toString().split('\n').filter(Boolean);

  it('a 2 MiB file is refused with the free space named, nothing written; a fitting one lands', async () => {
    const target = { env, cwd: '/small' };
    const e = await rejectsWith(checkUpload(target, { dir: '.', name: 'two.bin', size: 2 * 1024 * 1024 }), 'no_space');
    expect(e.message).toMatch(/two\.bin needs 2097152 bytes, \d+ are free/);
    await rejectsWith(startUpload(target, { dir: '/small', name: 'two.bin', size: 2 * 1024 * 1024 }), 'no_space');
    expect(ls()).toEqual([]);

    const bytes = randomBytes(700 * 1024);
    const sink = await startUpload(target, { dir: '.', name: 'fits.bin', size: bytes.length });
    sink.input.end(bytes);
    expect(await sink.done).toEqual({ path: '/small/fits.bin', bytes: bytes.length });
    expect(ls()).toEqual(['fits.bin']);
    // The second one no longer fits: refused up front, the first one untouched.
    await rejectsWith(startUpload(target, { dir: '.', name: 'more.bin', size: bytes.length }), 'no_space');
    expect(ls()).toEqual(['fits.bin']);
  }, 120_000);
});
