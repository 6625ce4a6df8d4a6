/**
 * Issue 13 item 6, second half: the default cwd exactly as the user typed it at create is kept (store
 * column typed_default_cwd) and SandboxInfo.defaultCwdStatus says what became of it — resolved,
 * normalised or ignored — against a real Docker sandbox, before and after it is connected, and across
 * a reopen of the core (it is persisted, not remembered in memory).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

describe('the default cwd as typed, with its status', () => {
  let t: TestDesk;
  beforeAll(() => {
    t = tempDesk();
  });
  afterAll(async () => {
    await t?.dispose();
  }, 120_000);

  it('"~" is shown as typed and resolved to the measured home once connected, also after a reopen', async () => {
    const name = uniqueName('typed-home');
    await t.desk.createSandbox({ name, backend: 'docker', image: 'sandbox-desk/base:latest', defaultCwd: '~' });
    await t.desk.exec({ sandbox: name, session: 's', command: 'true' });
    const info = await t.desk.inspectSandbox(name);
    expect(info.home).toMatch(/^\//);
    expect(info.defaultCwdStatus).toEqual({ typed: '~', state: 'resolved', text: `~ → ${info.home} (resolved)` });
    const again = await t.reopen().inspectSandbox(name);
    expect(again.defaultCwdStatus.typed).toBe('~');
  });

  it('an absolute path is kept as typed beside what normalising made of it', async () => {
    const name = uniqueName('typed-abs');
    const r = await t.desk.createSandbox({ name, backend: 'docker', image: 'sandbox-desk/base:latest', defaultCwd: '/tmp//typed/' });
    expect(r.sandbox.declaredDefaultCwd).toBe('/tmp/typed');
    await t.desk.exec({ sandbox: name, session: 's', command: 'true' });
    const info = await t.desk.inspectSandbox(name);
    expect(info.defaultCwdStatus).toEqual({ typed: '/tmp//typed/', state: 'normalized', text: '/tmp//typed/ → /tmp/typed (normalized)' });
  });

  it('a host path typed for a container is ignored, and the status says so and what is used instead', async () => {
    const name = uniqueName('typed-host');
    const r = await t.desk.createSandbox({
      name,
      backend: 'docker',
      image: 'sandbox-desk/base:latest',
      defaultCwd: '/Users/someone/project',
    });
    expect(r.warnings.map((w) => w.code)).toContain('default_cwd_ignored');
    const info = await t.desk.inspectSandbox(name);
    expect(info.defaultCwdStatus.state).toBe('ignored');
    expect(info.defaultCwdStatus.text).toMatch(/^\/Users\/someone\/project — ignored: not usable inside this sandbox; using /);
  });
});
