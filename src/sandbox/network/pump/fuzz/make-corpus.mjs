#!/usr/bin/env node
// Writes the pump fuzzer's seed corpus (corpus/, kept in the repo): what a sandbox's client may send
// the egress proxy, each file one connection's bytes — a request head, then a tunnel's first bytes.
// `allowed.test` is the name the tests allow; `evil.test` marks every attempt to reach another host
// through it (test/hardening/pump-fuzz.test.ts: no destination may ever receive it). Ports are
// written out (:443, :80) so the test can point them at its own servers. Run again after a change:
//   node src/sandbox/network/pump/fuzz/make-corpus.mjs
// (The ClientHello builder is test/hardening/tls-hello.ts's, in plain JavaScript for this script.)
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = join(dirname(fileURLToPath(import.meta.url)), 'corpus');
const u16 = (n) => Buffer.from([n >> 8, n & 0xff]);

function hello(names, { version = [3, 3] } = {}) {
  const exts = [];
  for (const n of names) {
    const host = Buffer.from(n, 'latin1');
    const list = Buffer.concat([Buffer.from([0]), u16(host.length), host]);
    exts.push(Buffer.concat([u16(0), u16(list.length + 2), u16(list.length), list]));
  }
  exts.push(Buffer.concat([u16(43), u16(3), Buffer.from([2, 3, 4])]));
  const ext = Buffer.concat(exts);
  const body = Buffer.concat([
    Buffer.from(version),
    Buffer.alloc(32, 7),
    Buffer.from([0]),
    u16(2),
    Buffer.from([0x13, 1]),
    Buffer.from([1, 0]),
    u16(ext.length),
    ext,
  ]);
  return Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 0xff]), body]);
}

function records(msg, sizes = []) {
  const out = [];
  let off = 0;
  for (const n of sizes) {
    out.push(Buffer.from([0x16, 3, 1]), u16(n), msg.subarray(off, off + n));
    off += n;
  }
  if (off < msg.length || sizes.length === 0) out.push(Buffer.from([0x16, 3, 1]), u16(msg.length - off), msg.subarray(off));
  return Buffer.concat(out);
}

const CONNECT = 'CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n';
const tunnel = (bytes) => Buffer.concat([Buffer.from(CONNECT, 'latin1'), bytes]);
const seeds = {
  // plain HTTP heads
  'get-absolute': 'GET http://allowed.test:80/a?b=c HTTP/1.1\r\nHost: allowed.test:80\r\nUser-Agent: t\r\n\r\n',
  'get-no-host': 'GET http://allowed.test:80/ HTTP/1.1\r\nAccept: */*\r\n\r\n',
  'get-http10': 'GET http://allowed.test:80/x HTTP/1.0\r\n\r\n',
  'post-body':
    'POST http://allowed.test:80/p HTTP/1.1\r\nHost: allowed.test:80\r\nContent-Length: 5\r\nProxy-Connection: keep-alive\r\n\r\nhello',
  'get-fragment': 'GET http://allowed.test:80/f#frag HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n',
  'get-query-only': 'GET http://allowed.test:80?q HTTP/1.1\r\n\r\n',
  'two-hosts': 'GET http://allowed.test:80/ HTTP/1.1\r\nHost: allowed.test:80\r\nHost: evil.test\r\n\r\n',
  'two-hosts-case': 'GET http://allowed.test:80/ HTTP/1.1\r\nhost: allowed.test:80\r\nHOST:evil.test\r\n\r\n',
  userinfo: 'GET http://evil.test:1@allowed.test:80/ HTTP/1.1\r\n\r\n',
  'userinfo-host': 'GET http://evil.test@allowed.test:80/ HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n',
  'backslash-authority': 'GET http://allowed.test:80\\@evil.test/ HTTP/1.1\r\n\r\n',
  'percent-authority': 'GET http://allowed%2etest:80/ HTTP/1.1\r\n\r\n',
  'upper-scheme': 'GET HTTP://allowed.test:80/ HTTP/1.1\r\n\r\n',
  'host-mismatch': 'GET http://allowed.test:80/ HTTP/1.1\r\nHost: evil.test:80\r\n\r\n',
  'host-userinfo': 'GET http://allowed.test:80/ HTTP/1.1\r\nHost: evil.test@allowed.test:80\r\n\r\n',
  'origin-form': 'GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n',
  'bad-header': 'GET http://allowed.test:80/ HTTP/1.1\r\nNo colon here\r\n\r\n',
  'bad-version': 'GET http://allowed.test:80/ HTTP/2.0\r\n\r\n',
  'head-unfinished': 'GET http://allowed.test:80/ HTTP/1.1\r\nHost: allowed.te',
  // CONNECT
  'connect-plain-tcp': tunnel(Buffer.from('SSH-2.0-client\r\n')),
  'connect-evil': 'CONNECT evil.test:443 HTTP/1.1\r\n\r\n',
  'connect-raw-ip': 'CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n',
  'connect-no-port': 'CONNECT allowed.test HTTP/1.1\r\n\r\n',
  'connect-two-hosts': 'CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\nHost: evil.test:443\r\n\r\n',
  // ClientHellos after CONNECT allowed.test
  'hello-ok': tunnel(records(hello(['allowed.test']))),
  'hello-ok-split': tunnel(records(hello(['allowed.test']), [20])),
  'hello-ok-zero-first': tunnel(records(hello(['ALLOWED.TEST']), [0])),
  'hello-ok-many': tunnel(records(hello(['allowed.test']), [1, 0, 2, 0, 3, 5, 8, 13])),
  'hello-evil': tunnel(records(hello(['evil.test']))),
  'hello-evil-zero-first': tunnel(records(hello(['evil.test']), [0])),
  'hello-evil-split': tunnel(records(hello(['evil.test']), [30])),
  'hello-evil-split-header': tunnel(records(hello(['evil.test']), [2])),
  'hello-evil-zeros': tunnel(records(hello(['evil.test']), [0, 0, 0, 0, 0, 0, 0, 0, 10])),
  'hello-evil-prefix': tunnel(records(hello(['allowed.test.evil.test']))),
  'hello-no-sni': tunnel(records(hello([]))),
  'hello-two-sni': tunnel(records(hello(['allowed.test', 'evil.test']))),
  'hello-truncated': tunnel(records(hello(['evil.test'])).subarray(0, 50)),
  'hello-oversized-record': tunnel(Buffer.from([0x16, 3, 1, 0x40, 1, 1, 0, 0, 0])),
  'hello-alert-between': tunnel(Buffer.concat([records(hello(['evil.test'])).subarray(0, 20), Buffer.from([0x15, 3, 3, 0, 2, 1, 0])])),
  'hello-server-hello': tunnel(Buffer.from([0x16, 3, 1, 0, 4, 2, 0, 0, 0])),
  'hello-bare': records(hello(['evil.test']), [0, 40]),
};

mkdirSync(dir, { recursive: true });
for (const f of readdirSync(dir)) rmSync(join(dir, f));
for (const [name, bytes] of Object.entries(seeds))
  writeFileSync(join(dir, name), typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
console.log(`make-corpus: ${Object.keys(seeds).length} seeds in ${dir}`);
