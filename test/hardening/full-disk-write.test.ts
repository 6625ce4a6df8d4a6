/**
 * Issue 35.3: MCP `write_file` over an existing file on a full disk. It used to truncate the old file
 * and stream into it (`cat > file`): the disk filled, a stub replaced the old content, a partial file
 * stood under the final name and the answer was `backend_unavailable` "could not be read". Now the bytes
 * go to a temporary name in the same folder and are renamed only when complete (the upload mechanism);
 * a full disk is `no_space` with the free space, and the old file is untouched. Also: a 300-character
 * name says the name is too long.
 *
 * The full disk is real: a 1 MiB tmpfs mounted on the host (this suite runs as root, as dockerd does)
 * and mounted into a Docker sandbox with `--mount`. The sandbox is hostile, so its `df` may lie: a
 * second case replaces `df` with one that claims plenty, so the write itself hits ENOSPC.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliIn, removeHome, tempHome } from './serve-child.js';

type ToolResult = { isError?: boolean; content: { type: string; text?: string }[] };
const json = (r: ToolResult) => JSON.parse(r.content[0]!.text!) as Record<string, any>;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const KiB = 1024;

describe('write_file on a full disk', () => {
  const home = tempHome('fulldisk');
  const sb = `full-${process.pid}`;
  const disk = mkdtempSync(join(tmpdir(), 'sdesk-fulldisk-'));
  const cli = cliIn(home);
  let client: Client;
  const call = async (name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as ToolResult;
  // The old file, and a filler that leaves about 100 KiB of the 1 MiB free.
  const old = randomBytes(200 * KiB);

  beforeAll(async () => {
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0777', 'sdesk-fulldisk', disk], { encoding: 'utf8' });
    expect(m.status, `mounting a tmpfs needs root: ${m.stderr}`).toBe(0);
    writeFileSync(join(disk, 'old.bin'), old);
    writeFileSync(join(disk, 'filler'), Buffer.alloc(1024 * KiB - 200 * KiB - 100 * KiB));
    spawnSync('chmod', ['666', join(disk, 'old.bin'), join(disk, 'filler')]);
    const r = cli(['sandbox', 'create', sb, '--backend', 'docker', '--mount', `${disk}:/full`, '--json']);
    expect(r.status, r.stderr).toBe(0);
    client = new Client({ name: 'fulldisk-test', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: { ...(process.env as Record<string, string>), SANDBOX_DESK_HOME: home },
      stderr: 'pipe',
    });
    await client.connect(transport);
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    cli(['sandbox', 'rm', sb, '--force']);
    removeHome(home);
    spawnSync('umount', [disk]);
    rmSync(disk, { recursive: true, force: true });
  });

  const leftovers = () => readdirSync(disk).filter((n) => n !== 'old.bin' && n !== 'filler' && n !== 'lost+found');

  it('a file larger than the free space: no_space with the free bytes; the old file is untouched, nothing else written', async () => {
    const r = await call('write_file', {
      sandbox: sb,
      path: '/full/old.bin',
      content: randomBytes(400 * KiB).toString('base64'),
      encoding: 'base64',
    });
    expect(r.isError).toBe(true);
    const e = json(r).error;
    expect(e.code).toBe('no_space');
    expect(e.message).toMatch(/needs 409600 bytes, \d+ are free/);
    expect(e.message).toMatch(/old\.bin is untouched/);
    expect(sha(readFileSync(join(disk, 'old.bin')))).toBe(sha(old));
    expect(leftovers()).toEqual([]);
  });

  it('a df that lies (the sandbox is hostile): the write hits ENOSPC, no_space, old file untouched, no partial file', async () => {
    const df = '#!/bin/sh\necho "Filesystem 1024-blocks Used Available Capacity Mounted on"\necho "liar 99999999 0 99999999 0% /"\n';
    const install = `echo ${Buffer.from(df).toString('base64')} | base64 -d > /usr/local/bin/df && chmod 755 /usr/local/bin/df && df /full`;
    const liar = cli(['exec', sb, '--user', 'root', '--', install]);
    expect(liar.stdout, liar.stderr).toMatch(/99999999/);
    const r = await call('write_file', {
      sandbox: sb,
      path: '/full/old.bin',
      content: randomBytes(150 * KiB).toString('base64'),
      encoding: 'base64',
    });
    expect(r.isError).toBe(true);
    const e = json(r).error;
    expect(e.code).toBe('no_space');
    expect(e.message).toMatch(/ran out of space/);
    expect(e.message).toMatch(/old\.bin is untouched/);
    expect(sha(readFileSync(join(disk, 'old.bin')))).toBe(sha(old));
    expect(leftovers()).toEqual([]);
    // A write that fits still replaces the file whole, keeping its mode.
    const small = randomBytes(10 * KiB);
    expect(
      json(await call('write_file', { sandbox: sb, path: '/full/old.bin', content: small.toString('base64'), encoding: 'base64' })),
    ).toMatchObject({
      path: '/full/old.bin',
      bytes: small.length,
    });
    expect(sha(readFileSync(join(disk, 'old.bin')))).toBe(sha(small));
    expect(leftovers()).toEqual([]);
  });

  it('a 300-character name: invalid_input that says the name is too long and the limit', async () => {
    const r = await call('write_file', { sandbox: sb, path: `/full/${'n'.repeat(300)}`, content: 'x' });
    expect(r.isError).toBe(true);
    const e = json(r).error;
    expect(e.code).toBe('invalid_input');
    expect(e.message).toMatch(/300 bytes long.*255/);
    expect(e.hint).toMatch(/shorter name/);
    expect(leftovers()).toEqual([]);
  });
});
