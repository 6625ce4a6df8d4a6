/**
 * Closing the browser-mode listener (serve's client gone, the service stopping) ends every TCP
 * connection it had, not just the listening socket: a keep-alive connection whose request was in flight
 * at the close would otherwise go on answering calls for as long as its client kept using it — the
 * listener "outliving" the serve that asked for it (a CI failure of service.test.ts, reproduced here).
 */
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tempDesk, type TestDesk } from '../../test/integration/helpers.js';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { ProviderRegistry } from '../sandbox/registry.js';
import { LocalServer } from './local-server.js';

let t: TestDesk;
beforeAll(() => {
  const registry = new ProviderRegistry();
  registry.registerBuiltin(new LocalProvider());
  t = tempDesk({ registry, plugins: false });
});
afterAll(() => t.dispose());

it('a keep-alive connection with a request in flight at the close is ended, not left answering', async () => {
  const server = new LocalServer({ desk: t.desk });
  await server.listen();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  /** A listSandboxes call on the one pooled connection; `held` delays the body's last byte. */
  const call = (held: Promise<void> = Promise.resolve()) =>
    new Promise<number>((resolve, reject) => {
      const req = request(
        `${server.origin}/api/call/listSandboxes`,
        { method: 'POST', agent, headers: { Authorization: `Bearer ${server.token}`, 'Content-Length': 2 } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.write('{');
      void held.then(() => req.end('}'));
    });
  let release = (): void => undefined;
  const inFlight = call(new Promise<void>((r) => (release = r)));
  await new Promise((r) => setTimeout(r, 100));
  const closed = server.close();
  release();
  // The request in flight may be answered or cut; either way the close finishes and nothing answers after.
  await inFlight.catch(() => 0);
  await closed;
  await expect(call()).rejects.toThrow(/ECONNREFUSED|ECONNRESET|socket hang up/);
  agent.destroy();
});
