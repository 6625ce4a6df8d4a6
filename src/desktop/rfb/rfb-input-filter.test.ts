import { describe, it, expect } from 'vitest';
import { seededRandom as prng } from '../../shared/test/seeded-random.js';
import { RfbInputFilter, RfbProtocolError } from './rfb-input-filter.js';

// ---- message builders (client → server, RFC 6143 plus extensions) ----

const version = (v = '003.008'): Buffer => Buffer.from(`RFB ${v}\n`, 'latin1');
/** ProtocolVersion 3.8, security type None, ClientInit with the given shared flag. */
const handshake38 = (shared = 1): Buffer => Buffer.concat([version('003.008'), Buffer.of(1, shared)]);

const setPixelFormat = (): Buffer => Buffer.of(0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0);
function setEncodings(encodings: number[]): Buffer {
  const b = Buffer.alloc(4 + 4 * encodings.length);
  b[0] = 2;
  b.writeUInt16BE(encodings.length, 2);
  encodings.forEach((e, i) => b.writeInt32BE(e, 4 + 4 * i));
  return b;
}
function fbUpdateRequest(incremental = 1): Buffer {
  const b = Buffer.alloc(10);
  b[0] = 3;
  b[1] = incremental;
  b.writeUInt16BE(1024, 6);
  b.writeUInt16BE(768, 8);
  return b;
}
function keyEvent(down: boolean, keysym: number): Buffer {
  const b = Buffer.alloc(8);
  b[0] = 4;
  b[1] = down ? 1 : 0;
  b.writeUInt32BE(keysym, 4);
  return b;
}
function pointerEvent(mask: number, x: number, y: number): Buffer {
  const b = Buffer.alloc(6);
  b[0] = 5;
  b[1] = mask;
  b.writeUInt16BE(x, 2);
  b.writeUInt16BE(y, 4);
  return b;
}
/** ClientCutText header declaring `length` (negative = Extended Clipboard), followed by |length| payload bytes unless headerOnly. */
function cutText(length: number, headerOnly = false): Buffer {
  const h = Buffer.alloc(8);
  h[0] = 6;
  h.writeInt32BE(length, 4);
  return headerOnly ? h : Buffer.concat([h, Buffer.alloc(Math.abs(length), 0x61)]);
}
const enableContinuousUpdates = (): Buffer => Buffer.of(150, 1, 0, 0, 0, 0, 4, 0, 3, 0);
function clientFence(data: number[]): Buffer {
  const b = Buffer.alloc(9);
  b[0] = 248;
  b.writeUInt32BE(0x80000002, 4);
  b[8] = data.length;
  return Buffer.concat([b, Buffer.from(data)]);
}
const xvp = (op: number): Buffer => Buffer.of(250, 0, 1, op);
function setDesktopSize(w: number, h: number, screens: number): Buffer {
  const b = Buffer.alloc(8 + 16 * screens);
  b[0] = 251;
  b.writeUInt16BE(w, 2);
  b.writeUInt16BE(h, 4);
  b[6] = screens;
  for (let i = 0; i < screens; i++) {
    b.writeUInt32BE(i + 1, 8 + 16 * i);
    b.writeUInt16BE(w, 8 + 16 * i + 8);
    b.writeUInt16BE(h, 8 + 16 * i + 10);
  }
  return b;
}
function qemuKey(down: boolean, keysym: number, keycode: number): Buffer {
  const b = Buffer.alloc(12);
  b[0] = 255;
  b[1] = 0;
  b.writeUInt16BE(down ? 1 : 0, 2);
  b.writeUInt32BE(keysym, 4);
  b.writeUInt32BE(keycode, 8);
  return b;
}
const qemuAudio = (op: number): Buffer => (op === 2 ? Buffer.of(255, 1, 0, 2, 3, 2, 0, 0, 0xac, 0x44) : Buffer.of(255, 1, 0, op));

/** Every message kind, in the order the mixed streams use them. */
const harmless = [
  setPixelFormat(),
  setEncodings([16, 7, 0, -223, -224, -308, -312]),
  fbUpdateRequest(0),
  enableContinuousUpdates(),
  clientFence([1, 2, 3]),
  clientFence([]),
  qemuAudio(0),
  qemuAudio(2),
  qemuAudio(1),
];
const inputs = [
  keyEvent(true, 0x61),
  keyEvent(false, 0x61),
  pointerEvent(1, 10, 20),
  cutText(5),
  cutText(-12),
  setDesktopSize(1280, 800, 1),
  setDesktopSize(1920, 1080, 2),
  qemuKey(true, 0x61, 30),
  xvp(2),
];

// ---- helpers ----

function feed(filter: RfbInputFilter, data: Buffer, chunkSizes: (remaining: number) => number = () => 1): Buffer {
  const out: Buffer[] = [];
  for (let i = 0; i < data.length;) {
    const n = Math.max(1, Math.min(chunkSizes(data.length - i), data.length - i));
    out.push(filter.push(data.subarray(i, i + n)));
    i += n;
  }
  return Buffer.concat(out);
}

function expectProtocolError(fn: () => unknown, reason: RfbProtocolError['reason']): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RfbProtocolError);
  expect((caught as RfbProtocolError).reason).toBe(reason);
}

/** A filter past the 3.8 handshake. */
function ready(mayControl: () => boolean, maxClipboardBytes?: number): RfbInputFilter {
  const f = new RfbInputFilter({ mayControl, ...(maxClipboardBytes === undefined ? {} : { maxClipboardBytes }) });
  f.push(handshake38());
  return f;
}

// ---- tests ----

describe('RfbInputFilter handshake', () => {
  it('forces the ClientInit shared flag to 1 for 3.8 (version, security type, init)', () => {
    const f = new RfbInputFilter({ mayControl: () => false });
    const input = handshake38(0);
    const copy = Buffer.from(input);
    const out = feed(f, input);
    expect(out).toEqual(Buffer.concat([version('003.008'), Buffer.of(1, 1)]));
    expect(input).toEqual(copy); // the caller's bytes are not rewritten in place
    expect(f.stats.messages).toEqual({ ProtocolVersion: 1, SecurityType: 1, ClientInit: 1 });
    expect(f.stats.forwarded).toBe(3);
  });

  it('forces the shared flag for 3.3, where the client sends no security byte', () => {
    const f = new RfbInputFilter({ mayControl: () => false });
    // The byte after ClientInit is already a message: were it read as a security type, sync would be lost.
    const input = Buffer.concat([version('003.003'), Buffer.of(0), fbUpdateRequest()]);
    expect(f.push(input)).toEqual(Buffer.concat([version('003.003'), Buffer.of(1), fbUpdateRequest()]));
    expect(f.stats.messages).toEqual({ ProtocolVersion: 1, ClientInit: 1, FramebufferUpdateRequest: 1 });
  });

  it('treats 3.7 like 3.8 (security byte) and leaves a nonzero shared flag as 1', () => {
    const f = new RfbInputFilter({ mayControl: () => false });
    const input = Buffer.concat([version('003.007'), Buffer.of(1, 1), setPixelFormat()]);
    expect(feed(f, input)).toEqual(input);
    const g = new RfbInputFilter({ mayControl: () => false });
    expect(g.push(Buffer.concat([version('003.008'), Buffer.of(1, 0xff)]))).toEqual(Buffer.concat([version('003.008'), Buffer.of(1, 1)]));
  });

  it('rejects a bad ProtocolVersion with bad_handshake', () => {
    expectProtocolError(() => new RfbInputFilter({ mayControl: () => true }).push(Buffer.from('RFB 3.8\n\n\n\n\n')), 'bad_handshake');
    expectProtocolError(() => new RfbInputFilter({ mayControl: () => true }).push(Buffer.from('GET / HTTP/1.1\r\n')), 'bad_handshake');
    expectProtocolError(() => feed(new RfbInputFilter({ mayControl: () => true }), Buffer.from('RFB 003.008\r')), 'bad_handshake');
  });

  it('rejects a security type other than None (its bytes could not be followed)', () => {
    const f = new RfbInputFilter({ mayControl: () => true });
    f.push(version('003.008'));
    expectProtocolError(() => f.push(Buffer.of(2)), 'bad_handshake');
  });
});

describe('RfbInputFilter messages', () => {
  it('byte by byte without the lease: only picture messages pass, all input is dropped', () => {
    const f = new RfbInputFilter({ mayControl: () => false });
    const stream = Buffer.concat([handshake38(), ...interleave(harmless, inputs)]);
    const out = feed(f, stream);
    expect(out).toEqual(Buffer.concat([handshake38(), ...harmless]));
    expect(f.stats.dropped).toBe(inputs.length);
    expect(f.stats.forwarded).toBe(3 + harmless.length);
    expect(f.stats.messages).toMatchObject({
      SetPixelFormat: 1,
      SetEncodings: 1,
      FramebufferUpdateRequest: 1,
      EnableContinuousUpdates: 1,
      ClientFence: 2,
      QemuAudio: 3,
      KeyEvent: 2,
      PointerEvent: 1,
      ClientCutText: 2,
      SetDesktopSize: 2,
      QemuExtendedKeyEvent: 1,
      Xvp: 1,
    });
    expect(f.buffered).toBe(0);
  });

  it('byte by byte with the lease: everything passes byte-exact', () => {
    const f = new RfbInputFilter({ mayControl: () => true });
    const stream = Buffer.concat([handshake38(), ...interleave(harmless, inputs)]);
    expect(feed(f, stream)).toEqual(stream);
    expect(f.stats.dropped).toBe(0);
  });

  it('tells onForwarded of each message that went through, by name (a resize only with the lease)', () => {
    for (const allowed of [false, true]) {
      const names: string[] = [];
      const f = new RfbInputFilter({ mayControl: () => allowed, onForwarded: (n) => names.push(n) });
      feed(f, Buffer.concat([handshake38(), ...interleave(harmless, inputs)]));
      expect(names.filter((n) => n === 'SetDesktopSize')).toHaveLength(allowed ? 2 : 0);
      expect(names).toContain('FramebufferUpdateRequest');
    }
  });

  it('asks mayControl once per input message, when it completes, and never for picture messages', () => {
    let allowed = false;
    let calls = 0;
    const f = ready(() => {
      calls++;
      return allowed;
    });
    expect(f.push(setPixelFormat())).toEqual(setPixelFormat());
    expect(calls).toBe(0);

    const k1 = keyEvent(true, 0x62);
    expect(f.push(k1.subarray(0, 4))).toHaveLength(0);
    allowed = true; // the lease arrives while the message is half received: the moment it completes counts
    expect(f.push(k1.subarray(4))).toEqual(k1);
    expect(calls).toBe(1);

    const p = pointerEvent(0, 5, 5);
    allowed = false;
    expect(f.push(Buffer.concat([p, k1]))).toHaveLength(0);
    allowed = true;
    expect(f.push(Buffer.concat([p, fbUpdateRequest(), k1]))).toEqual(Buffer.concat([p, fbUpdateRequest(), k1]));
    expect(calls).toBe(5);
  });

  it('switching mayControl between messages takes effect per message, whole messages only', () => {
    const decisions = [true, false, false, true, true, false, true, false, true];
    let i = 0;
    const f = ready(() => decisions[i++]!);
    const out = feed(f, Buffer.concat(inputs), () => 3);
    expect(out).toEqual(Buffer.concat(inputs.filter((_, k) => decisions[k])));
    expect(i).toBe(inputs.length);
  });

  it('random chunkings of a mixed stream give the same output as one big chunk', () => {
    const stream = Buffer.concat([
      handshake38(0),
      ...interleave(harmless, inputs),
      cutText(3000),
      setEncodings(Array.from({ length: 300 }, (_, k) => k)),
    ]);
    // The lease flips every third input message, deterministically, so all runs see the same decisions.
    const leaseByCount = (): (() => boolean) => {
      let n = 0;
      return () => Math.floor(n++ / 3) % 2 === 0;
    };
    const reference = new RfbInputFilter({ mayControl: leaseByCount() }).push(stream);
    expect(reference.length).toBeGreaterThan(0);
    expect(reference.length).toBeLessThan(stream.length);
    for (let seed = 1; seed <= 40; seed++) {
      const rnd = prng(seed);
      const maxChunk = [1, 2, 7, 64, 4096][seed % 5]!;
      const f = new RfbInputFilter({ mayControl: leaseByCount() });
      expect(feed(f, stream, () => 1 + Math.floor(rnd() * maxChunk))).toEqual(reference);
      expect(f.buffered).toBe(0);
    }
  });

  it('rejects an oversized clipboard at its 8-byte header, with or without the lease', () => {
    const limit = 256 * 1024;
    for (const length of [limit + 1, -(limit + 1), -0x80000000, 0x7fffffff]) {
      for (const lease of [true, false]) {
        const f = ready(() => lease);
        const header = cutText(length, true);
        for (let i = 0; i < 7; i++) expect(f.push(header.subarray(i, i + 1))).toHaveLength(0);
        expectProtocolError(() => f.push(header.subarray(7)), 'clipboard_too_large');
        expectProtocolError(() => f.push(Buffer.alloc(1)), 'clipboard_too_large'); // stays failed
      }
    }
  });

  it('accepts a clipboard of exactly the limit (both forms) and honours a custom limit', () => {
    const f = ready(() => true);
    const big = Buffer.concat([cutText(256 * 1024), cutText(-256 * 1024)]);
    expect(feed(f, big, () => 10_000).equals(big)).toBe(true); // .equals: a deep toEqual of 512 KiB is slow

    const g = ready(() => true, 100);
    expect(g.push(cutText(100))).toEqual(cutText(100));
    expectProtocolError(() => g.push(cutText(-101, true)), 'clipboard_too_large');
  });

  it('rejects unknown message types and QEMU submessages with unknown_message', () => {
    expectProtocolError(() => ready(() => true).push(Buffer.of(7)), 'unknown_message');
    expectProtocolError(() => ready(() => true).push(Buffer.of(1, 0, 0, 0)), 'unknown_message');
    expectProtocolError(() => ready(() => true).push(Buffer.of(255, 2, 0, 0)), 'unknown_message');
    // A fence may carry at most 64 bytes.
    const fence = clientFence([]);
    fence[8] = 65;
    expectProtocolError(() => ready(() => true).push(fence), 'unknown_message');
  });

  it('passes a legal SetEncodings of 65535 entries, then resumes parsing after it', () => {
    const huge = setEncodings(Array.from({ length: 65535 }, (_, k) => k - 1000));
    expect(huge.length).toBe(4 + 262140);
    const f = ready(() => false);
    expect(feed(f, Buffer.concat([huge, fbUpdateRequest()]), () => 1).equals(Buffer.concat([huge, fbUpdateRequest()]))).toBe(true);
    expect(f.buffered).toBe(0);

    // Followed by garbage: the encodings are consumed as such, buffering stays within the message, and
    // the garbage after it is refused.
    const g = ready(() => false);
    const header = huge.subarray(0, 4);
    const garbage = Buffer.alloc(300_000, 7);
    expect(g.push(header)).toHaveLength(0);
    expect(g.push(garbage.subarray(0, 262139))).toHaveLength(0);
    expect(g.buffered).toBe(4 + 262139);
    expectProtocolError(() => g.push(garbage.subarray(262139)), 'unknown_message');
  });

  it('caps buffer growth: a message longer than the buffer is refused at its header', () => {
    // With a 1 KiB clipboard limit the buffer holds 65 KiB: an encoding list of 65535 entries (256 KiB) is refused.
    const f = ready(() => true, 1024);
    expectProtocolError(() => f.push(Buffer.of(2, 0, 0xff, 0xff)), 'buffer_overflow');
    // One that fits still passes.
    const g = ready(() => true, 1024);
    const ok = setEncodings(Array.from({ length: 16000 }, (_, k) => k));
    expect(g.push(ok)).toEqual(ok);
  });
});

/** a0, b0, a1, b1, …, then whatever is left of the longer list. */
function interleave(a: Buffer[], b: Buffer[]): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i]) out.push(a[i]!);
    if (b[i]) out.push(b[i]!);
  }
  return out;
}
