/**
 * The server name (SNI) of a TLS ClientHello, read from the first bytes a client sends, so the egress
 * proxy can check that a tunnel to an allowed host is not used to speak TLS to another one. Hand-written:
 * it reads exactly one extension of one record (RFC 8446 §4.1.2, RFC 6066 §3); a full TLS library would
 * be far more than needed. Returns null when there is no SNI or the hello is not complete in `buf`.
 */
export function sniOf(buf: Buffer): string | null {
  try {
    // record header: type(1)=0x16, version(2), length(2); handshake: type(1)=1, length(3), version(2), random(32)
    if (buf.length < 5 + 4 + 2 + 32 + 1 || buf[0] !== 0x16 || buf[5] !== 0x01) return null;
    let p = 5 + 4 + 2 + 32;
    p += 1 + buf[p]!; // session id
    p += 2 + buf.readUInt16BE(p); // cipher suites
    p += 1 + buf[p]!; // compression methods
    if (p + 2 > buf.length) return null;
    const end = p + 2 + buf.readUInt16BE(p);
    p += 2;
    while (p + 4 <= end && p + 4 <= buf.length) {
      const type = buf.readUInt16BE(p);
      const len = buf.readUInt16BE(p + 2);
      p += 4;
      if (type === 0) {
        // server_name list: length(2), then entries of type(1)=0 (host_name), length(2), name
        let q = p + 2;
        while (q + 3 <= p + len) {
          const nameType = buf[q]!;
          const nameLen = buf.readUInt16BE(q + 1);
          if (nameType === 0) return buf.subarray(q + 3, q + 3 + nameLen).toString('ascii');
          q += 3 + nameLen;
        }
        return null;
      }
      p += len;
    }
    return null;
  } catch {
    return null;
  }
}
