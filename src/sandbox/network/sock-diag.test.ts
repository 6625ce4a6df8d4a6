import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { endianness } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressBytes, packInetDiagRequest, parseInetDiagReply, REQUEST_LEN, SockDiag } from './sock-diag.js';

const LE = endianness() === 'LE';
const r16 = (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o));
const r32 = (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o));

/** One netlink message as the kernel would send it: header (len, type, flags, seq, pid) and payload. */
function nlmsg(type: number, seq: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(16);
  const len = 16 + payload.length;
  if (LE) {
    h.writeUInt32LE(len, 0);
    h.writeUInt16LE(type, 4);
    h.writeUInt32LE(seq, 8);
  } else {
    h.writeUInt32BE(len, 0);
    h.writeUInt16BE(type, 4);
    h.writeUInt32BE(seq, 8);
  }
  return Buffer.concat([h, payload, Buffer.alloc((4 - (len % 4)) % 4)]);
}

function diagMsg(inode: number): Buffer {
  const m = Buffer.alloc(72);
  m[0] = 2;
  m[1] = 1; // ESTABLISHED
  if (LE) m.writeUInt32LE(inode, 68);
  else m.writeUInt32BE(inode, 68);
  return m;
}

function errMsg(errno: number): Buffer {
  const e = Buffer.alloc(4 + 16);
  if (LE) e.writeInt32LE(-errno, 0);
  else e.writeInt32BE(-errno, 0);
  return e;
}

describe('sock_diag messages', () => {
  it('packs one exact SOCK_DIAG_BY_FAMILY request for an IPv4 4-tuple', () => {
    const b = packInetDiagRequest({ src: '172.20.0.3', sport: 40312, dst: '172.20.0.2', dport: 3128 }, 77);
    expect(b.length).toBe(REQUEST_LEN);
    expect(r32(b, 0)).toBe(72);
    expect(r16(b, 4)).toBe(20); // SOCK_DIAG_BY_FAMILY
    expect(r16(b, 6)).toBe(1); // NLM_F_REQUEST only: no NLM_F_DUMP
    expect(r32(b, 8)).toBe(77);
    expect([b[16], b[17]]).toEqual([2, 6]); // AF_INET, IPPROTO_TCP
    expect(b.readUInt16BE(24)).toBe(40312);
    expect(b.readUInt16BE(26)).toBe(3128);
    expect([...b.subarray(28, 32)]).toEqual([172, 20, 0, 3]);
    expect([...b.subarray(32, 44)]).toEqual(Array(12).fill(0));
    expect([...b.subarray(44, 48)]).toEqual([172, 20, 0, 2]);
    expect(r32(b, 60)).toBe(0);
    expect([r32(b, 64), r32(b, 68)]).toEqual([0xffffffff, 0xffffffff]); // INET_DIAG_NOCOOKIE
  });

  it('IPv6 addresses, and what is not a 4-tuple', () => {
    expect(addressBytes('::1')).toEqual({ family: 10, bytes: Buffer.from([...Array(15).fill(0), 1]) });
    expect([...addressBytes('fd00:1::2:3')!.bytes]).toEqual([0xfd, 0, 0, 1, ...Array(8).fill(0), 0, 2, 0, 3]);
    expect(addressBytes('2001:db8:0:0:0:0:0:1')!.bytes.readUInt16BE(14)).toBe(1);
    expect(addressBytes('not-an-ip')).toBeNull();
    expect(packInetDiagRequest({ src: '::1', sport: 1, dst: '::1', dport: 2 }, 1)[16]).toBe(10);
    expect(() => packInetDiagRequest({ src: '10.0.0.1', sport: 1, dst: '::1', dport: 2 }, 1)).toThrow();
    expect(() => packInetDiagRequest({ src: '10.0.0.1', sport: 0, dst: '10.0.0.2', dport: 2 }, 1)).toThrow();
  });

  it('parses the answer: the inode, the kernel’s errno, its own sequence number only', () => {
    expect(parseInetDiagReply(nlmsg(20, 5, diagMsg(123456)), 5)).toEqual({ inode: 123456 });
    expect(parseInetDiagReply(nlmsg(2, 5, errMsg(2)), 5)).toEqual({ errno: 2 });
    expect(parseInetDiagReply(Buffer.concat([nlmsg(20, 4, diagMsg(1)), nlmsg(20, 5, diagMsg(9))]), 5)).toEqual({ inode: 9 });
    expect(parseInetDiagReply(nlmsg(20, 4, diagMsg(1)), 5)).toBeNull();
    expect(parseInetDiagReply(nlmsg(20, 5, diagMsg(1)).subarray(0, 40), 5)).toBeNull();
    expect(parseInetDiagReply(Buffer.alloc(0), 5)).toBeNull();
  });
});

function hasPython(): boolean {
  try {
    execFileSync('python3', ['-c', 'pass']);
    return true;
  } catch {
    return false;
  }
}

// setns needs CAP_SYS_ADMIN: as another user the helper is `unavailable`, which the fallback covers.
describe.runIf(process.getuid?.() === 0 && hasPython())('the helper, on a real connection of this process', () => {
  let server: net.Server;
  let client: net.Socket;
  let port: number;
  const diag = new SockDiag();
  beforeAll(async () => {
    server = net.createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as net.AddressInfo).port;
    client = net.connect(port, '127.0.0.1');
    await new Promise((r) => client.once('connect', r));
  });
  afterAll(() => {
    diag.dispose();
    client.destroy();
    server.close();
  });

  it('finds the inode of exactly that socket and its holder (this process), and nothing for a tuple nobody holds', async () => {
    const found = await diag.inodeOf(process.pid, { src: '127.0.0.1', sport: client.localPort!, dst: '127.0.0.1', dport: port });
    expect(found).toMatchObject({ holder: process.pid });
    const inode = (found as { inode: number }).inode;
    const links = readdirSync('/proc/self/fd').map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    });
    expect(links).toContain(`socket:[${inode}]`);
    expect(
      await diag.inodeOf(process.pid, { src: '127.0.0.1', sport: client.localPort!, dst: '127.0.0.1', dport: port === 1 ? 2 : 1 }),
    ).toBeNull();
    // A namespace that does not exist (no such pid) is "not known", not the fallback.
    expect(await diag.inodeOf(2 ** 22 + 7, { src: '127.0.0.1', sport: client.localPort!, dst: '127.0.0.1', dport: port })).toBeNull();
  });

  it("a socket of another process is found as that one's, though the last holder is looked at first", async () => {
    const tuple = { src: '127.0.0.1', sport: client.localPort!, dst: '127.0.0.1', dport: port };
    expect(await diag.inodeOf(process.pid, tuple)).toMatchObject({ holder: process.pid });
    const other = spawn('python3', [
      '-c',
      `import socket, time\ns = socket.create_connection(("127.0.0.1", ${port}))\nprint(s.getsockname()[1], flush=True)\ntime.sleep(30)`,
    ]);
    try {
      const sport = Number(await new Promise<string>((r) => other.stdout.once('data', (d: Buffer) => r(d.toString()))));
      expect(await diag.inodeOf(process.pid, { ...tuple, sport })).toMatchObject({ holder: other.pid });
      // The other one, the last holder now, does not hold this socket: the walk finds this process.
      expect(await diag.inodeOf(process.pid, tuple)).toMatchObject({ holder: process.pid });
    } finally {
      other.kill();
    }
  });

  it('without python the answer is `unavailable` (the caller falls back to /proc/net/tcp)', async () => {
    const none = new SockDiag('/nonexistent/python3');
    expect(await none.inodeOf(process.pid, { src: '127.0.0.1', sport: client.localPort!, dst: '127.0.0.1', dport: port })).toBe(
      'unavailable',
    );
    none.dispose();
  });
});
