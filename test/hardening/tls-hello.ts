/**
 * TLS ClientHellos as a hostile sandbox may frame them (RFC 8446 §5.1): the handshake message alone,
 * then cut into records of any sizes, zero-length fragments included. The egress pump must read the
 * server_name however the message is framed (egress-bypass.test.ts, pump-fuzz.test.ts and the fuzzer's
 * seed corpus, make-pump-corpus.ts).
 */

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

/** A ClientHello handshake message (type 1, its 3-byte length, its body) naming `name`, or no server_name at all (null). */
export function helloMessage(name: string | null, opts: { twoNames?: string } = {}): Buffer {
  const exts: Buffer[] = [];
  const sniExt = (n: string): Buffer => {
    const host = Buffer.from(n, 'latin1');
    const list = Buffer.concat([Buffer.from([0]), u16(host.length), host]);
    return Buffer.concat([u16(0), u16(list.length + 2), u16(list.length), list]);
  };
  if (name !== null) exts.push(sniExt(name));
  if (opts.twoNames) exts.push(sniExt(opts.twoNames));
  // supported_versions (TLS 1.3), so the hello is not only a server_name
  exts.push(Buffer.concat([u16(43), u16(3), Buffer.from([2, 3, 4])]));
  const ext = Buffer.concat(exts);
  const body = Buffer.concat([
    Buffer.from([3, 3]),
    Buffer.alloc(32, 7),
    Buffer.from([0]),
    u16(2),
    Buffer.from([0x13, 0x01]),
    Buffer.from([1, 0]),
    u16(ext.length),
    ext,
  ]);
  return Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 0xff]), body]);
}

/** `msg` cut into handshake records of these fragment sizes (0: a zero-length record; the last takes the rest). */
export function records(msg: Buffer, sizes: number[] = []): Buffer {
  const out: Buffer[] = [];
  let off = 0;
  for (const n of sizes) {
    out.push(Buffer.from([0x16, 3, 1]), u16(n), msg.subarray(off, off + n));
    off += n;
  }
  if (off < msg.length || sizes.length === 0) out.push(Buffer.from([0x16, 3, 1]), u16(msg.length - off), msg.subarray(off));
  return Buffer.concat(out);
}
