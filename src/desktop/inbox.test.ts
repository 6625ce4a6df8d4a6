import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Inbox, InboxTimeoutError } from './inbox.js';

/** A peer in the sandbox's place: connects, sends `first`, and reports whether the inbox closed it. */
function peer(path: string, first: Buffer | string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(path, () => {
      s.write(first);
      resolve(s);
    });
    s.once('error', reject);
  });
}

const closed = (s: Socket): Promise<void> => new Promise((r) => (s.destroyed ? r() : s.once('close', () => r())));

describe('the inbox', () => {
  let dir: string;
  let inbox: Inbox;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'inbox-'));
    inbox = await Inbox.listen(dir);
  });

  afterEach(() => {
    inbox.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('listens on a socket of its own, 0666, named for this process', () => {
    expect(inbox.socketName).toMatch(new RegExp(`^inbox-${process.pid}-[0-9a-f]{16}\\.sock$`));
    const st = statSync(inbox.path);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o666);
  });

  it('hands over the connection that says a registered token, with the bytes that came with it', async () => {
    const e = inbox.expect(5000);
    expect(e.token).toMatch(/^[0-9a-f]{32}$/);
    const p = await peer(inbox.path, Buffer.concat([Buffer.from(`${e.token}\n`), Buffer.from('RFB 003.008\n')]));
    const s = await e.connection;
    const got: Buffer[] = [];
    s.on('data', (d: Buffer) => got.push(d));
    p.write('more');
    await new Promise((r) => setTimeout(r, 100));
    expect(Buffer.concat(got).toString()).toBe('RFB 003.008\nmore');
    s.write('back');
    const back = await new Promise<string>((r) => p.once('data', (d: Buffer) => r(d.toString())));
    expect(back).toBe('back');
    expect(inbox.accepted).toBe(1);
    p.destroy();
    s.destroy();
  });

  it('takes a token split over several writes', async () => {
    const e = inbox.expect(5000);
    const p = await peer(inbox.path, e.token.slice(0, 10));
    await new Promise((r) => setTimeout(r, 50));
    p.write(`${e.token.slice(10)}\n`);
    const s = await e.connection;
    expect(s).toBeDefined();
    p.destroy();
    s.destroy();
  });

  it('closes a connection with an unknown token, and one that reuses a token', async () => {
    const e = inbox.expect(5000);
    const stranger = await peer(inbox.path, `${'0'.repeat(32)}\n`);
    await closed(stranger);
    const first = await peer(inbox.path, `${e.token}\n`);
    const s = await e.connection;
    const again = await peer(inbox.path, `${e.token}\n`);
    await closed(again);
    expect(inbox.accepted).toBe(1);
    expect(first.destroyed).toBe(false);
    first.destroy();
    s.destroy();
  });

  it('closes a line that is too long or not a token', async () => {
    const long = await peer(inbox.path, 'x'.repeat(100));
    await closed(long);
    const bad = await peer(inbox.path, 'not a token\n');
    await closed(bad);
    expect(inbox.accepted).toBe(0);
  });

  it('gives up on a token nobody sends in time, and the late connection is closed', async () => {
    const e = inbox.expect(100);
    await expect(e.connection).rejects.toBeInstanceOf(InboxTimeoutError);
    const late = await peer(inbox.path, `${e.token}\n`);
    await closed(late);
  });

  it('cancel rejects the wait and forgets the token', async () => {
    const e = inbox.expect(5000);
    e.cancel(new Error('relay ended'));
    await expect(e.connection).rejects.toThrow('relay ended');
    const late = await peer(inbox.path, `${e.token}\n`);
    await closed(late);
  });

  it('removes sockets left by dead processes, keeps live ones, and its own on dispose', async () => {
    // pid 2^22+1 is above the kernel's pid_max: never alive.
    writeFileSync(join(dir, 'inbox-4194305-00.sock'), '');
    writeFileSync(join(dir, `inbox-${process.ppid}-00.sock`), '');
    const other = await Inbox.listen(dir);
    expect(readdirSync(dir).sort()).toEqual([`inbox-${process.ppid}-00.sock`, inbox.socketName, other.socketName].sort());
    other.dispose();
    expect(readdirSync(dir)).not.toContain(other.socketName);
  });

  it('refuses to listen in a folder that is not there', async () => {
    await expect(Inbox.listen(join(dir, 'missing'))).rejects.toThrow();
  });
});
