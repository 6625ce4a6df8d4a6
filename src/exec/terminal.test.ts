import { describe, expect, it } from 'vitest';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { TerminalSession } from './terminal.js';

/** A real PTY with a real local login shell (the local backend's exec prefix is empty). */
async function open(target: string) {
  const env = await new LocalProvider().createEnvironment({
    cwd: '/tmp',
    sandbox: { name: 'l', backendRef: null, image: null, user: null, mounts: [], env: {}, options: {} },
  });
  const cwds: string[] = [];
  let out = '';
  const t = new TerminalSession(env, { target, cols: 80, rows: 24, onCwd: (c) => cwds.push(c) });
  t.attach({ send: (d, done) => ((out += d.toString()), done()), bufferedAmount: 0 });
  return { t, cwds, screen: () => out };
}

describe('TerminalSession (real PTY, local bash)', () => {
  it('starts in the target, and every prompt reports the measured cwd', async () => {
    const { t, cwds } = await open('/tmp');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/tmp');
    t.write('cd /usr/bin\r');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/usr/bin');
    t.kill();
  });

  it("a report printed by a program, without the terminal's nonce, changes nothing", async () => {
    const { t, cwds, screen } = await open('/');
    await expect.poll(() => cwds.length, { timeout: 10_000 }).toBeGreaterThan(0);
    const before = cwds.length;
    t.write("printf '\\033]7;file://sdesk-0000/etc\\007'; echo done-printing\r");
    await expect.poll(screen, { timeout: 10_000 }).toMatch(/done-printing\r\n/);
    await expect.poll(() => cwds.length, { timeout: 5_000 }).toBeGreaterThan(before);
    expect(cwds.slice(before).every((c) => c === '/')).toBe(true);
    t.kill();
  });

  it('a target that is gone: starts in its nearest ancestor and says so', async () => {
    const { t, cwds, screen } = await open('/tmp/sdesk-surely-missing/deeper');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/tmp');
    expect(screen()).toMatch(/is missing; starting in \/tmp/);
    t.kill();
  });
});
