import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxDesk } from '../../src/api/sandbox-desk.js';
import { ProviderRegistry } from '../../src/sandbox/registry.js';
import { DockerProvider } from '../../src/sandbox/docker/docker-provider.js';
import { LocalProvider } from '../../src/sandbox/local/local-provider.js';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

function docker(...args: string[]): string {
  return execFileSync('docker', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

describe('docker sandboxes against the real engine', () => {
  let t: TestDesk;
  beforeAll(() => {
    t = tempDesk();
  });
  afterAll(async () => {
    await t.dispose();
  });

  it('create → exec → inspect → stop → rm', async () => {
    const name = uniqueName();
    const { sandbox } = await t.desk.createSandbox({ name, backend: 'docker', defaultCwd: '~' });
    expect(sandbox).toMatchObject({
      state: 'running',
      backend: 'docker',
      user: 'agent',
      declaredDefaultCwd: '~',
      home: '/home/agent',
      tempDir: '/tmp',
      isContainer: true,
      supportsStreams: true,
    });

    const r = await t.desk.exec({ sandbox: name, command: 'pwd; id -un' });
    expect(r).toMatchObject({ exitCode: 0, stdout: '/home/agent\nagent\n', cwd: '/home/agent', cwdObserved: true });

    const info = await t.desk.inspectSandbox(name);
    expect(info.lastObservedCwd).toBe('/home/agent');
    expect(docker('inspect', '-f', '{{index .Config.Labels "io.sandbox-desk.managed"}}', info.backendRef!)).toBe('true');

    expect((await t.desk.stopSandbox(name)).state).toBe('stopped');
    expect(docker('inspect', '-f', '{{.State.Running}}', info.backendRef!)).toBe('false');
    await t.desk.removeSandbox(name);
    expect((await t.desk.listSandboxes()).map((s) => s.name)).not.toContain(name);
    expect(() => docker('inspect', info.backendRef!)).toThrow();
  });

  it('hardened defaults: not privileged, non-root image user, nothing published', async () => {
    const name = uniqueName();
    const { sandbox } = await t.desk.createSandbox({ name, backend: 'docker' });
    const hc = JSON.parse(docker('inspect', '-f', '{{json .HostConfig}}', sandbox.backendRef!)) as {
      Privileged: boolean;
      PortBindings: unknown;
      PublishAllPorts: boolean;
      SecurityOpt: string[];
    };
    expect(hc.Privileged).toBe(false);
    expect(hc.PublishAllPorts).toBe(false);
    expect(hc.PortBindings ?? {}).toEqual({});
    expect(hc.SecurityOpt).toContain('no-new-privileges');
    expect(docker('port', sandbox.backendRef!)).toBe('');
    expect(sandbox.user).toBe('agent');
    await t.desk.removeSandbox(name, { force: true });
  });

  it("reports a container removed behind the app's back, and exec on it says so", async () => {
    const name = uniqueName();
    const { sandbox } = await t.desk.createSandbox({ name, backend: 'docker' });
    await t.desk.exec({ sandbox: name, command: 'true' });
    docker('rm', '-f', sandbox.backendRef!);
    expect((await t.desk.inspectSandbox(name)).state).toBe('missing');
    expect((await t.desk.listSandboxes()).find((s) => s.name === name)?.state).toBe('missing');
    const err = await rejectsWith(t.desk.exec({ sandbox: name, command: 'true' }), 'sandbox_missing');
    expect(err.message).toMatch(/removed outside Sandbox Desk/);
    await t.desk.removeSandbox(name);
  });

  it("reports a container stopped behind the app's back; exec on a stopped sandbox is refused with how to start it", async () => {
    const name = uniqueName();
    const { sandbox } = await t.desk.createSandbox({ name, backend: 'docker' });
    await t.desk.exec({ sandbox: name, command: 'true' });
    docker('stop', '-t', '0', sandbox.backendRef!);
    expect((await t.desk.inspectSandbox(name)).state).toBe('stopped');
    const err = await rejectsWith(t.desk.exec({ sandbox: name, command: 'true' }), 'sandbox_not_running');
    expect(err.hint).toMatch(/sandbox-desk sandbox start/);
    await rejectsWith(t.desk.exec({ sandbox: name, command: 'true', mode: 'oneshot' }), 'sandbox_not_running');
    await t.desk.removeSandbox(name);
  });

  it('exec on a removed sandbox is not_found', async () => {
    const name = uniqueName();
    await t.desk.createSandbox({ name, backend: 'docker', start: false });
    await t.desk.removeSandbox(name);
    await rejectsWith(t.desk.exec({ sandbox: name, command: 'true' }), 'not_found');
  });

  it('--no-start creates a stopped sandbox whose home is resolved only after connect', async () => {
    const name = uniqueName();
    const { sandbox } = await t.desk.createSandbox({ name, backend: 'docker', start: false });
    expect(sandbox).toMatchObject({ state: 'stopped', home: null, declaredDefaultCwd: '~' });
    const started = await t.desk.startSandbox(name);
    expect(started.state).toBe('running');
    expect((await t.desk.inspectSandbox(name)).home).toBe('/home/agent');
    await t.desk.removeSandbox(name, { force: true });
  });

  it('refuses to remove a running sandbox without force', async () => {
    const name = uniqueName();
    await t.desk.createSandbox({ name, backend: 'docker' });
    const err = await rejectsWith(t.desk.removeSandbox(name), 'refused');
    expect(err.hint).toMatch(/--force/);
    await t.desk.removeSandbox(name, { force: true });
  });

  it('an image that does not exist: says so and how to get it; nothing is left behind', async () => {
    const name = uniqueName();
    const err = await rejectsWith(t.desk.createSandbox({ name, backend: 'docker', image: 'sandbox-desk/nope:latest' }), 'image_not_found');
    expect(err.message).toMatch(/sandbox-desk\/nope:latest/);
    expect(err.hint).toMatch(/sandbox-desk image build --tag sandbox-desk\/nope:latest FOLDER/);
    const err2 = await rejectsWith(t.desk.createSandbox({ name, backend: 'docker', image: 'example.invalid/other:1' }), 'image_not_found');
    expect(err2.hint).toMatch(/image pull|image build/);
    // A typo of an image that is there: the hint names it.
    const err3 = await rejectsWith(t.desk.createSandbox({ name, backend: 'docker', image: 'sandbox-desk/destkop' }), 'image_not_found');
    expect(err3.hint).toMatch(/did you mean sandbox-desk\/desktop:latest\?/);
    expect((await t.desk.listSandboxes()).map((s) => s.name)).not.toContain(name);
  });

  it('--default-cwd relative on docker: refused with invalid_input, nothing made; host-shaped: accepted with a warning', async () => {
    const a = uniqueName();
    const err = await rejectsWith(t.desk.createSandbox({ name: a, backend: 'docker', defaultCwd: 'projects/x' }), 'invalid_input');
    expect(err.oneLine()).toMatch(/is relative — give an absolute in-sandbox path .*or ~/);
    expect((await t.desk.listSandboxes()).map((s) => s.name)).not.toContain(a);
    const b = uniqueName();
    const r2 = await t.desk.createSandbox({ name: b, backend: 'docker', defaultCwd: '/Users/me/project' });
    expect(r2.warnings[0]?.message).toMatch(/host path/);
    expect((await t.desk.exec({ sandbox: b, command: 'pwd' })).cwd).toBe('/home/agent');
    const c = uniqueName();
    const r3 = await t.desk.createSandbox({ name: c, backend: 'docker', defaultCwd: '/tmp' });
    expect(r3.warnings).toEqual([]);
    expect((await t.desk.exec({ sandbox: c, command: 'pwd' })).cwd).toBe('/tmp');
    for (const n of [b, c]) await t.desk.removeSandbox(n, { force: true });
  });

  it("a declared /home/… default is kept when it is the sandbox's own home, dropped once the home shows it is a host path", async () => {
    const a = uniqueName();
    const own = await t.desk.createSandbox({ name: a, backend: 'docker', defaultCwd: '/home/agent/project' });
    expect(own.warnings).toEqual([]);
    expect(own.sandbox.declaredDefaultCwd).toBe('/home/agent/project');
    const r = await t.desk.exec({ sandbox: a, command: 'pwd' });
    expect(r.warnings.map((w) => w.code)).toEqual(['cwd_missing']);
    const b = uniqueName();
    const other = await t.desk.createSandbox({ name: b, backend: 'docker', defaultCwd: '/home/someone/project' });
    expect(other.warnings.map((w) => w.code)).toEqual(['default_cwd_ignored']);
    expect(other.sandbox.declaredDefaultCwd).toBe('~');
    expect((await t.desk.exec({ sandbox: b, command: 'pwd' })).cwd).toBe('/home/agent');
    for (const n of [a, b]) await t.desk.removeSandbox(n, { force: true });
  });

  it('"~" resolves to the real home: /home/agent for agent, /root for root', async () => {
    const a = uniqueName();
    const b = uniqueName();
    await t.desk.createSandbox({ name: a, backend: 'docker', defaultCwd: '~' });
    await t.desk.createSandbox({ name: b, backend: 'docker', defaultCwd: '~', user: 'root' });
    expect((await t.desk.exec({ sandbox: a, command: 'pwd' })).cwd).toBe('/home/agent');
    const root = await t.desk.exec({ sandbox: b, command: 'pwd; id -u' });
    expect(root).toMatchObject({ cwd: '/root', stdout: '/root\n0\n' });
    expect((await t.desk.inspectSandbox(b)).home).toBe('/root');
    for (const n of [a, b]) await t.desk.removeSandbox(n, { force: true });
  });

  it('the Docker engine not reachable: says so and how to start it, no stack trace', async () => {
    const registry = new ProviderRegistry();
    registry.registerBuiltin(new LocalProvider());
    registry.registerBuiltin(
      new DockerProvider({
        url: 'unix:///nonexistent/docker.sock',
        origin: 'DOCKER_HOST',
        options: { socketPath: '/nonexistent/docker.sock' },
      }),
    );
    const u = tempDesk({ registry });
    try {
      const err = await rejectsWith(u.desk.createSandbox({ name: uniqueName(), backend: 'docker' }), 'engine_unreachable');
      expect(err.message).toMatch(/not reachable at unix:\/\/\/nonexistent\/docker.sock/);
      expect(err.hint).toMatch(/systemctl start docker|npm run setup/);
      expect(err.message).not.toMatch(/\n\s+at /);
      expect(await u.desk.listSandboxes()).toEqual([]);
    } finally {
      await u.dispose();
    }
  });

  it('a backend that changes its declared default cwd is followed by the next command of a new session', async () => {
    // The declaration is read on every command; the "~" in it resolves to the home measured at connect.
    class MovingDocker extends DockerProvider {
      override defaultCwd: string = '~';
    }
    const moving = new MovingDocker();
    const registry = new ProviderRegistry();
    registry.registerBuiltin(new LocalProvider());
    registry.registerBuiltin(moving);
    const u = tempDesk({ registry });
    const name = uniqueName('mv');
    try {
      await u.desk.createSandbox({ name, backend: 'docker' });
      expect((await u.desk.exec({ sandbox: name, command: 'pwd', session: 'a' })).stdout).toBe('/home/agent\n');
      moving.defaultCwd = '/tmp';
      expect(await u.desk.exec({ sandbox: name, command: 'pwd', session: 'b' })).toMatchObject({ stdout: '/tmp\n', cwdSource: 'default' });
      expect((await u.desk.exec({ sandbox: name, command: 'pwd', session: 'a' })).stdout).toBe('/home/agent\n');
      moving.defaultCwd = 'relative/dir';
      const r = await u.desk.exec({ sandbox: name, command: 'pwd', session: 'c' });
      expect(r.stdout).toBe('/home/agent\n');
      expect(r.warnings.map((w) => w.code)).toContain('default_cwd_ignored');
    } finally {
      await u.dispose();
    }
  });

  it('a backend that cannot answer marks its sandboxes unavailable; the list still shows the others', async () => {
    const u = tempDesk();
    const [d, l] = [uniqueName('d'), uniqueName('l')];
    try {
      await u.desk.createSandbox({ name: d, backend: 'docker', start: false });
      await u.desk.createSandbox({ name: l, backend: 'local', defaultCwd: '/tmp' });
      const registry = new ProviderRegistry();
      registry.registerBuiltin(new LocalProvider());
      registry.registerBuiltin(
        new DockerProvider({
          url: 'unix:///nonexistent/docker.sock',
          origin: 'DOCKER_HOST',
          options: { socketPath: '/nonexistent/docker.sock' },
        }),
      );
      const list = await u.reopen({ registry }).listSandboxes();
      expect(list.find((s) => s.name === d)).toMatchObject({
        state: 'unavailable',
        stateDetail: expect.stringMatching(/not reachable at unix:\/\/\/nonexistent/),
      });
      expect(list.find((s) => s.name === l)).toMatchObject({ state: 'running' });
    } finally {
      await u.dispose();
    }
  });
});

describe('sandbox input validation (no engine involved)', () => {
  let desk: SandboxDesk;
  let t: TestDesk;
  beforeAll(() => {
    t = tempDesk();
    desk = t.desk;
  });
  afterAll(async () => t.dispose());

  it.each([
    ['', /empty/],
    ['x'.repeat(64), /longer than 63/],
    ['a/b', /no spaces or \//],
    ['has space', /no spaces or \//],
    ['-dash', /start with a letter or digit/],
  ])('rejects the name %j', async (name, msg) => {
    const err = await rejectsWith(desk.createSandbox({ name, backend: 'local' }), 'invalid_input');
    expect(err.message).toMatch(msg);
  });

  it('rejects a name that already exists, and keeps the existing sandbox', async () => {
    const name = uniqueName();
    await desk.createSandbox({ name, backend: 'local', defaultCwd: '/tmp' });
    await rejectsWith(desk.createSandbox({ name, backend: 'local' }), 'name_taken');
    expect((await desk.inspectSandbox(name)).declaredDefaultCwd).toBe('/tmp');
    await desk.removeSandbox(name);
  });

  it('rejects an unknown backend and lists the available ones', async () => {
    const err = await rejectsWith(desk.createSandbox({ name: uniqueName(), backend: 'vmware' }), 'unknown_backend');
    expect(err.hint).toMatch(/local, docker/);
  });

  it('rejects a timeout that is not a positive number', async () => {
    const name = uniqueName();
    await desk.createSandbox({ name, backend: 'local', defaultCwd: '/tmp' });
    for (const timeoutSeconds of [0, -1, Number.NaN]) {
      const err = await rejectsWith(desk.exec({ sandbox: name, command: 'true', timeoutSeconds }), 'invalid_input');
      expect(err.message).toMatch(/timeout/);
    }
    await desk.removeSandbox(name);
  });
});
