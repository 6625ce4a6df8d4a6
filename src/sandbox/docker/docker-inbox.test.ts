import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureInboxDir, inboxBind, inboxDirOf, inboxFromMounts, INBOX_SANDBOX_DIR } from './docker-inbox.js';

describe('the Docker inbox mount', () => {
  const dir = inboxDirOf('/data', 'sdesk-abc-demo');

  it('is one short folder per container, bound read-only', () => {
    expect(dir).toMatch(/^\/data\/inbox\/[0-9a-f]{12}$/);
    expect(inboxDirOf('/data', 'sdesk-abc-other')).not.toBe(dir);
    expect(inboxBind(dir)).toBe(`${dir}:${INBOX_SANDBOX_DIR}:ro`);
  });

  it('is read from the real mounts: a read-only bind of the expected folder only', () => {
    const ro = { Type: 'bind', Source: dir, Destination: INBOX_SANDBOX_DIR, RW: false };
    expect(inboxFromMounts([{ Type: 'bind', Source: '/h', Destination: '/w', RW: true }, ro], dir)).toEqual({
      hostDir: dir,
      sandboxDir: INBOX_SANDBOX_DIR,
    });
    expect(inboxFromMounts([], dir)).toBeUndefined(); // a container made before inboxes
    expect(inboxFromMounts(undefined, dir)).toBeUndefined();
    expect(inboxFromMounts([{ ...ro, RW: true }], dir)).toBeUndefined(); // writable: the sandbox could replace the socket
    expect(inboxFromMounts([{ ...ro, Source: '/elsewhere' }], dir)).toBeUndefined();
    expect(inboxFromMounts([{ ...ro, Type: 'volume' }], dir)).toBeUndefined();
    expect(inboxFromMounts([ro], undefined)).toBeUndefined(); // a provider without a data dir (or a remote engine)
  });

  it('makes the folder searchable by every account whatever the umask', () => {
    const root = mkdtempSync(join(tmpdir(), 'inbox-dir-'));
    const old = process.umask(0o077);
    try {
      const d = join(root, 'inbox', 'x');
      ensureInboxDir(d);
      expect(statSync(d).mode & 0o777).toBe(0o755);
      ensureInboxDir(d); // again: no error
    } finally {
      process.umask(old);
      rmSync(root, { recursive: true, force: true });
    }
  });
});
