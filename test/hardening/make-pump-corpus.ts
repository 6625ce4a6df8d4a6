// Writes the pump fuzzer's seed corpus (src/sandbox/network/pump/fuzz/corpus/, kept in the repo): what a
// sandbox's client may send the egress proxy, each file one connection's bytes — a request head, then a
// tunnel's first bytes. `allowed.test` is the name the tests allow; `evil.test` marks every attempt to
// reach another host through it (pump-fuzz.test.ts: no destination may ever receive it). Ports are
// written out (:443, :80) so the test can point them at its own servers. Run again after a change:
//   npx tsx test/hardening/make-pump-corpus.ts
// The ClientHellos are tls-hello.ts's, the same bytes egress-bypass.test.ts sends.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { helloMessage, records } from './tls-hello.js';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'sandbox', 'network', 'pump', 'fuzz', 'corpus');

const CONNECT = 'CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n';
const tunnel = (bytes: Buffer): Buffer => Buffer.concat([Buffer.from(CONNECT, 'latin1'), bytes]);
const seeds: Record<string, string | Buffer> = {
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
  'hello-ok': tunnel(records(helloMessage('allowed.test'))),
  'hello-ok-split': tunnel(records(helloMessage('allowed.test'), [20])),
  'hello-ok-zero-first': tunnel(records(helloMessage('ALLOWED.TEST'), [0])),
  'hello-ok-many': tunnel(records(helloMessage('allowed.test'), [1, 0, 2, 0, 3, 5, 8, 13])),
  'hello-evil': tunnel(records(helloMessage('evil.test'))),
  'hello-evil-zero-first': tunnel(records(helloMessage('evil.test'), [0])),
  'hello-evil-split': tunnel(records(helloMessage('evil.test'), [30])),
  'hello-evil-split-header': tunnel(records(helloMessage('evil.test'), [2])),
  'hello-evil-zeros': tunnel(records(helloMessage('evil.test'), [0, 0, 0, 0, 0, 0, 0, 0, 10])),
  'hello-evil-prefix': tunnel(records(helloMessage('allowed.test.evil.test'))),
  'hello-no-sni': tunnel(records(helloMessage(null))),
  'hello-two-sni': tunnel(records(helloMessage('allowed.test', { twoNames: 'evil.test' }))),
  'hello-truncated': tunnel(records(helloMessage('evil.test')).subarray(0, 50)),
  'hello-oversized-record': tunnel(Buffer.from([0x16, 3, 1, 0x40, 1, 1, 0, 0, 0])),
  'hello-alert-between': tunnel(Buffer.concat([records(helloMessage('evil.test')).subarray(0, 20), Buffer.from([0x15, 3, 3, 0, 2, 1, 0])])),
  'hello-server-hello': tunnel(Buffer.from([0x16, 3, 1, 0, 4, 2, 0, 0, 0])),
  'hello-bare': records(helloMessage('evil.test'), [0, 40]),
};

mkdirSync(dir, { recursive: true });
for (const f of readdirSync(dir)) rmSync(join(dir, f));
for (const [name, bytes] of Object.entries(seeds))
  writeFileSync(join(dir, name), typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
console.log(`make-pump-corpus: ${Object.keys(seeds).length} seeds in ${dir}`);
