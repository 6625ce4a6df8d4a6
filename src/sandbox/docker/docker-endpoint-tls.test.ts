/**
 * A Docker context's TLS material (contexts/tls/<id>/docker/{ca,cert,key}.pem, SkipTLSVerify), end to
 * end: a fake engine over HTTPS that demands a client certificate, reached through dockerode with the
 * options resolveDockerEndpoint reads from a fake DOCKER_CONFIG. Certificates are made with openssl.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveDockerEndpoint } from './docker-endpoint.js';

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

let dir = '';
let server: Server;
let port = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sdesk-dtls-'));
  // A CA, an engine certificate for 127.0.0.1 and a client certificate, both signed by it.
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=test-ca'],
    dir,
  );
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  for (const who of ['server', 'client']) {
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${who}-key.pem`, '-out', `${who}.csr`, '-subj', `/CN=${who}`], dir);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${who}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca-key.pem',
        '-CAcreateserial',
        '-out',
        `${who}.pem`,
        '-days',
        '1',
        ...(who === 'server' ? ['-extfile', 'ext.cnf'] : []),
      ],
      dir,
    );
  }
  const f = (n: string) => readFileSync(join(dir, n));
  server = createServer(
    { key: f('server-key.pem'), cert: f('server.pem'), ca: f('ca.pem'), requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(req.url?.includes('_ping') ? 'OK' : '{}');
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
}, 60_000);
afterAll(() => {
  server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A DOCKER_CONFIG with one context pointing at the fake engine, and the given TLS files. */
function contextConfig(name: string, files: Record<string, string>, skipVerify: boolean): string {
  const config = mkdtempSync(join(dir, 'config-'));
  const id = createHash('sha256').update(name).digest('hex');
  mkdirSync(join(config, 'contexts', 'meta', id), { recursive: true });
  writeFileSync(
    join(config, 'contexts', 'meta', id, 'meta.json'),
    JSON.stringify({ Name: name, Endpoints: { docker: { Host: `tcp://127.0.0.1:${port}`, SkipTLSVerify: skipVerify } } }),
  );
  const tls = join(config, 'contexts', 'tls', id, 'docker');
  mkdirSync(tls, { recursive: true });
  for (const [to, from] of Object.entries(files)) writeFileSync(join(tls, to), readFileSync(join(dir, from)));
  writeFileSync(join(config, 'config.json'), JSON.stringify({ currentContext: name }));
  return config;
}

describe('docker context TLS', () => {
  it('reads ca/cert/key from the context store: https, and dockerode reaches an engine that demands a client certificate', async () => {
    const config = contextConfig('tls-ctx', { 'ca.pem': 'ca.pem', 'cert.pem': 'client.pem', 'key.pem': 'client-key.pem' }, false);
    const e = resolveDockerEndpoint({ DOCKER_CONFIG: config });
    expect(e.options).toMatchObject({ protocol: 'https', host: '127.0.0.1', port });
    expect(e.options.ca).toEqual(readFileSync(join(dir, 'ca.pem')));
    expect((e.options as { agent?: unknown }).agent).toBeUndefined();
    expect(String(await new Docker(e.options).ping())).toBe('OK');
  });

  it("SkipTLSVerify: TLS with the client certificate but without checking the engine's (no CA given)", async () => {
    const config = contextConfig('skip-ctx', { 'cert.pem': 'client.pem', 'key.pem': 'client-key.pem' }, true);
    const e = resolveDockerEndpoint({ DOCKER_CONFIG: config });
    expect(e.options).toMatchObject({ protocol: 'https' });
    expect(String(await new Docker(e.options).ping())).toBe('OK');
    // Without the skip, the same files fail on the engine's unknown CA: the flag is what makes it work.
    const strict = contextConfig('strict-ctx', { 'cert.pem': 'client.pem', 'key.pem': 'client-key.pem' }, false);
    await expect(new Docker(resolveDockerEndpoint({ DOCKER_CONFIG: strict }).options).ping()).rejects.toThrow(
      /self.signed|unable to (get|verify)/i,
    );
  });

  it('DOCKER_HOST with DOCKER_TLS_VERIFY=1 reads the files from DOCKER_CERT_PATH', async () => {
    const certs = mkdtempSync(join(dir, 'certs-'));
    for (const [to, from] of Object.entries({ 'ca.pem': 'ca.pem', 'cert.pem': 'client.pem', 'key.pem': 'client-key.pem' }))
      writeFileSync(join(certs, to), readFileSync(join(dir, from)));
    const e = resolveDockerEndpoint({
      DOCKER_HOST: `tcp://127.0.0.1:${port}`,
      DOCKER_TLS_VERIFY: '1',
      DOCKER_CERT_PATH: certs,
      DOCKER_CONFIG: certs,
    });
    expect(String(await new Docker(e.options).ping())).toBe('OK');
  });
});
