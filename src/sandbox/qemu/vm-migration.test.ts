import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProgressEvent } from '../provider.js';
import { loadVmState, migrationProgress, saveVmState } from './vm-migration.js';

/** A fake QMP monitor: answers each command with `reply`, and records what it was asked. */
function fakeQmp(
  reply: (cmd: Record<string, unknown>) => unknown,
): Promise<{ path: string; server: Server; dir: string; asked: Record<string, unknown>[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'sdesk-mig-'));
  const path = join(dir, 'qmp.sock');
  const asked: Record<string, unknown>[] = [];
  const server = createServer((sock: Socket) => {
    sock.write(JSON.stringify({ QMP: { version: {}, capabilities: [] } }) + '\n');
    let buf = '';
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => {
      buf += c;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const cmd = JSON.parse(buf.slice(0, i)) as Record<string, unknown>;
        buf = buf.slice(i + 1);
        if (cmd.execute !== 'qmp_capabilities') asked.push(cmd);
        sock.write(JSON.stringify(cmd.execute === 'qmp_capabilities' ? { return: {} } : reply(cmd)) + '\n');
      }
    });
  });
  return new Promise((resolve) => server.listen(path, () => resolve({ path, server, dir, asked })));
}

let cleanup: (() => void) | null = null;
afterEach(() => {
  cleanup?.();
  cleanup = null;
});

const MiB = 2 ** 20;

describe('migrationProgress', () => {
  it('says how much of the guest memory is saved', () => {
    expect(migrationProgress({ status: 'active', ram: { transferred: 312 * MiB, total: 1024 * MiB } })).toBe(
      'saved 312/1024 MiB of guest memory',
    );
  });
  it('is null before QEMU knows the RAM size', () => {
    expect(migrationProgress({ status: 'setup' })).toBeNull();
  });
});

describe('saveVmState', () => {
  it('migrates to the file (path quoted for the shell QEMU runs), reports progress, ends when completed', async () => {
    let polls = 0;
    const q = await fakeQmp((cmd) => {
      if (cmd.execute === 'query-migrate') {
        polls++;
        return polls < 2
          ? { return: { status: 'active', ram: { transferred: 100 * MiB, total: 1024 * MiB } } }
          : { return: { status: 'completed', ram: { transferred: 1024 * MiB, total: 1024 * MiB } } };
      }
      return { return: {} };
    });
    cleanup = () => {
      q.server.close();
      rmSync(q.dir, { recursive: true, force: true });
    };
    const events: ProgressEvent[] = [];
    await saveVmState({ qmpSocket: q.path, file: "/data/it's here/memory.bin", progress: (e) => events.push(e) });
    const migrate = q.asked.find((c) => c.execute === 'migrate');
    expect(migrate?.arguments).toEqual({ uri: `exec:cat > '/data/it'\\''s here/memory.bin'` });
    expect(events.map((e) => e.message)).toEqual(['saved 100/1024 MiB of guest memory', 'saved 1024/1024 MiB of guest memory']);
  });

  it('x-ignore-shared: on for a RAM-file save and load (the stream has no RAM), off for any other save, off after a load', async () => {
    const q = await fakeQmp((cmd) => {
      if (cmd.execute === 'query-migrate') return { return: { status: 'completed' } };
      if (cmd.execute === 'query-status') return { return: { status: 'paused' } };
      return { return: {} };
    });
    cleanup = () => {
      q.server.close();
      rmSync(q.dir, { recursive: true, force: true });
    };
    const cap = (state: boolean) => ({
      execute: 'migrate-set-capabilities',
      arguments: { capabilities: [{ capability: 'x-ignore-shared', state }] },
    });
    const asked = () => q.asked.splice(0).filter((c) => c.execute !== 'query-migrate' && c.execute !== 'query-status');
    await saveVmState({ qmpSocket: q.path, file: '/x/memory.bin', progress: () => undefined, ignoreShared: true });
    expect(asked().slice(1, 3)).toEqual([cap(true), { execute: 'migrate', arguments: { uri: 'exec:cat > /x/memory.bin' } }]);
    // An ordinary save says off: a VM restored from a template had it on for its own load.
    await saveVmState({ qmpSocket: q.path, file: '/x/memory.bin', progress: () => undefined });
    expect(asked().slice(1, 3)).toEqual([cap(false), { execute: 'migrate', arguments: { uri: 'exec:cat > /x/memory.bin' } }]);
    const load = { qmpSocket: q.path, file: '/x/memory.bin', progress: () => undefined, deadline: Date.now() + 5000, alive: () => true };
    await loadVmState({ ...load, ignoreShared: true });
    expect(asked()).toEqual([cap(true), { execute: 'migrate-incoming', arguments: { uri: 'exec:cat /x/memory.bin' } }, cap(false)]);
    await loadVmState(load);
    expect(asked()).toEqual([{ execute: 'migrate-incoming', arguments: { uri: 'exec:cat /x/memory.bin' } }]);
  });

  it('a failed migration (e.g. the disk is full) is an error that says where to look', async () => {
    const q = await fakeQmp((cmd) =>
      cmd.execute === 'query-migrate'
        ? { return: { status: 'failed', 'error-desc': 'Unable to write to command: No space left on device' } }
        : { return: {} },
    );
    cleanup = () => {
      q.server.close();
      rmSync(q.dir, { recursive: true, force: true });
    };
    await expect(saveVmState({ qmpSocket: q.path, file: '/x/memory.bin', progress: () => undefined })).rejects.toThrow(
      /saving the VM's memory failed: .*No space left/,
    );
  });

  it('a cancel stops the migration (migrate_cancel) and says it was cancelled', async () => {
    const ac = new AbortController();
    const q = await fakeQmp((cmd) => {
      if (cmd.execute === 'query-migrate') {
        ac.abort();
        return { return: { status: q.asked.some((c) => c.execute === 'migrate_cancel') ? 'cancelled' : 'active' } };
      }
      return { return: {} };
    });
    cleanup = () => {
      q.server.close();
      rmSync(q.dir, { recursive: true, force: true });
    };
    await expect(saveVmState({ qmpSocket: q.path, file: '/x/m', progress: () => undefined, signal: ac.signal })).rejects.toMatchObject({
      code: 'cancelled',
    });
    expect(q.asked.some((c) => c.execute === 'migrate_cancel')).toBe(true);
  });
});
