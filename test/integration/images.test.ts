/**
 * Images against the real Docker engine: list, build with progress (the CLI, as a user runs it), a
 * failing step, a cancelled build, a step that fills its disk, rm refused while used, pull refused where
 * no registry is reachable, `--desktop` on an image derived from sandbox-desk/base (a first frame), and
 * docker CPU/memory limits as the engine and the cgroup inside show them.
 *
 * The --desktop test installs the desktop's packages from the Debian mirror once (~5 min on a fresh
 * machine); its source and derived images are kept, like setup's, so a second run takes seconds.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejectsWith } from '../expect-error.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const BIN = resolve(import.meta.dirname, '../../bin/sandbox-desk.js');

function docker(...args: string[]): { code: number; out: string } {
  const r = spawnSync('docker', args, { encoding: 'utf8' });
  return { code: r.status ?? -1, out: (r.stdout + r.stderr).trim() };
}

/** Containers (any state) whose command line holds `marker`: a build step's container is one. */
function containersWith(marker: string): string[] {
  return execFileSync('docker', ['ps', '-a', '--no-trunc', '--format', '{{.ID}} {{.Command}}'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(marker));
}

/** Processes on this machine whose command line holds `marker` (the build step's own `sleep`). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmd.includes(marker) && state !== 'Z') pids.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('images against the real engine', () => {
  let t: TestDesk;
  let work: string;
  const marker = uniqueName('imgmark');
  const tags: string[] = [];
  const env = (): NodeJS.ProcessEnv => ({ ...process.env, SANDBOX_DESK_HOME: t.dataDir });
  const cli = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: env(), timeout: 600_000 });
  const folder = (name: string, dockerfile: string, files: Record<string, string> = {}): string => {
    const dir = join(work, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'Dockerfile'), dockerfile);
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
    return dir;
  };
  const tag = (name: string): string => {
    const t = `sdtest/${name}-${marker}:1`;
    tags.push(t);
    return t;
  };

  beforeAll(() => {
    t = tempDesk();
    work = mkdtempSync(join(tmpdir(), 'sdesk-images-'));
  });
  afterAll(async () => {
    await t.dispose();
    for (const x of tags) docker('rmi', '-f', x);
    rmSync(work, { recursive: true, force: true });
  });

  it("lists the app's images with sizes, created time and desktop parts", async () => {
    const { images } = await t.desk.images.list();
    const base = images.find((i) => i.ref === 'sandbox-desk/base:latest')!;
    expect(base).toMatchObject({ kind: 'docker', origin: 'app', desktop: false });
    expect(base.sizeBytes).toBeGreaterThan(10 * 2 ** 20);
    expect(images.find((i) => i.ref === 'sandbox-desk/desktop:latest')?.desktop).toBe(true);
    const cli1 = cli('image', 'list');
    expect(cli1.status).toBe(0);
    expect(cli1.stdout).toMatch(/^docker\s+sandbox-desk\/base:latest\s+\d+(\.\d)? MiB/m);
  });

  it('builds from a folder with each step and its output streamed (--json: one object per line)', () => {
    const t1 = tag('ok');
    const dir = folder('ok', `FROM sandbox-desk/base:latest\nCOPY hello.txt /hello.txt\nRUN echo out-${marker} && cat /hello.txt\n`, {
      'hello.txt': 'hi',
    });
    const r = cli('image', 'build', '--tag', t1, dir, '--json');
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event?: { kind: string; text: string; step?: number }; task?: { state: string } });
    const steps = lines.filter((l) => l.event?.kind === 'step').map((l) => l.event!.text);
    expect(steps.slice(0, 3)).toEqual([
      'FROM sandbox-desk/base:latest',
      'COPY hello.txt /hello.txt',
      `RUN echo out-${marker} && cat /hello.txt`,
    ]);
    expect(lines.some((l) => l.event?.kind === 'output' && l.event.text === `out-${marker}` && l.event.step === 3)).toBe(true);
    expect(lines.at(-1)?.task?.state).toBe('succeeded');
    expect(docker('image', 'inspect', t1).code).toBe(0);
  });

  it('a failing step N: the error names step N and shows its output; nothing is tagged', () => {
    const t2 = tag('bad');
    const dir = folder('bad', `FROM sandbox-desk/base:latest\nRUN echo fine\nRUN echo broke-${marker} >&2 && exit 7\nRUN echo never\n`);
    const r = cli('image', 'build', '--tag', t2, dir);
    expect(r.status).toBe(125);
    expect(r.stderr).toMatch(
      new RegExp(`failed at step 3/\\d+ \\(RUN echo broke-${marker} >&2 && exit 7\\)[^\\n]*code: 7\\n {2}\\| broke-${marker}`),
    );
    expect(r.stderr).toMatch(/nothing was tagged/);
    expect(docker('image', 'inspect', t2).code).not.toBe(0);
  });

  it('Ctrl-C cancels a build midway: exit 130, nothing tagged, the step container and its process gone', async () => {
    const t3 = tag('slow');
    const slowMarker = `slow-${marker}`;
    const dir = folder('slow', `FROM sandbox-desk/base:latest\nRUN echo started-${slowMarker} && sleep 300\n`);
    const child = spawn(process.execPath, [BIN, 'image', 'build', '--tag', t3, dir], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    await new Promise<void>((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`the step never started: ${stderr}`)), 60_000);
      child.stderr.on('data', (c: Buffer) => {
        stderr += c.toString();
        if (stderr.includes(`| started-${slowMarker}`)) {
          clearTimeout(timer);
          res();
        }
      });
    });
    expect(processesWith(slowMarker).length).toBeGreaterThan(0);
    child.kill('SIGINT');
    const code = await new Promise<number | null>((res) => child.on('close', (c) => res(c)));
    expect(code).toBe(130);
    expect(stderr).toMatch(/cancelled; nothing was tagged/);
    expect(docker('image', 'inspect', t3).code).not.toBe(0);
    // The engine removes the step's container once the request is gone; give it a moment.
    for (let i = 0; i < 50 && (containersWith(slowMarker).length || processesWith(slowMarker).length); i++)
      await new Promise((r) => setTimeout(r, 200));
    expect(containersWith(slowMarker)).toEqual([]);
    expect(processesWith(slowMarker)).toEqual([]);
  });

  it('a step that fills its disk says so (a real ENOSPC: the build container has a 64 MiB /dev/shm)', () => {
    const t4 = tag('full');
    const dir = folder(
      'full',
      `FROM sandbox-desk/base:latest\nUSER root\nRUN dd if=/dev/zero of=/dev/shm/fill-${marker} bs=1M count=200\n`,
    );
    const r = cli('image', 'build', '--tag', t4, dir);
    expect(r.status).toBe(125);
    expect(r.stderr).toMatch(/ran out of disk space at step 3\/\d+/);
    expect(r.stderr).toMatch(/No space left on device/);
    expect(r.stderr).toMatch(/docker system df/);
    expect(docker('image', 'inspect', t4).code).not.toBe(0);
  });

  it('rm is refused while a sandbox uses the image, naming it; allowed once the sandbox is gone', async () => {
    const t5 = tag('used');
    await t.desk.images.buildDocker({ tag: t5, context: folder('used', 'FROM sandbox-desk/base:latest\nLABEL used=1\n') }).done;
    const name = uniqueName('imguser');
    await t.desk.createSandbox({ name, backend: 'docker', image: t5, start: false });
    expect((await t.desk.images.list()).images.find((i) => i.ref === t5)?.usedBy).toEqual([name]);
    const err = await rejectsWith(t.desk.images.remove(t5), 'refused');
    expect(err.message).toBe(`image ${t5} is used by sandbox ${name}`);
    const r = cli('image', 'rm', t5);
    expect(r.status).toBe(125);
    expect(r.stderr).toContain(`used by sandbox ${name}`);
    await t.desk.removeSandbox(name, { force: true });
    expect(cli('image', 'rm', t5).stdout).toBe(`Removed ${t5}.\n`);
    expect(docker('image', 'inspect', t5).code).not.toBe(0);
  });

  it('pull: where no registry is reachable, the error says so once and points at image build', () => {
    const r = cli('image', 'pull', `sdtest/not-here-${marker}:1`);
    expect(r.status).toBe(125);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/no container registry is reachable from this machine/);
    expect(lines[0]).toMatch(/sandbox-desk image build --tag TAG FOLDER/);
  });

  it('docker CPU and memory limits: the engine holds them, the cgroup inside enforces them, inspect shows them', async () => {
    const name = uniqueName('imglim');
    const { sandbox } = await t.desk.createSandbox({ name, backend: 'docker', options: { cpus: '1.5', memory: '300' } });
    expect(sandbox.details).toMatchObject({ cpus: 1.5, memoryMiB: 300 });
    expect(docker('inspect', '-f', '{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}}', sandbox.backendRef!).out).toBe(
      `1500000000 ${300 * 2 ** 20}`,
    );
    // cgroup v2 (cpu.max, memory.max) or v1 (cfs quota/period, limit_in_bytes), whichever the host has.
    const r = await t.desk.exec({
      sandbox: name,
      command:
        'if [ -f /sys/fs/cgroup/cpu.max ]; then cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max; else echo "$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"; cat /sys/fs/cgroup/memory/memory.limit_in_bytes; fi',
    });
    expect(r.stdout).toBe(`150000 100000\n${300 * 2 ** 20}\n`);
    await rejectsWith(
      t.desk.createSandbox({ name: uniqueName('imglim'), backend: 'docker', options: { memory: 'lots' } }),
      'invalid_input',
    );
    await t.desk.removeSandbox(name, { force: true });
  });

  it('--desktop on a non-Debian/Ubuntu image is refused, naming what /etc/os-release says', async () => {
    const t6 = tag('notdeb');
    await t.desk.images.buildDocker({
      tag: t6,
      context: folder(
        'notdeb',
        'FROM sandbox-desk/base:latest\nUSER root\nRUN rm /etc/os-release && printf \'PRETTY_NAME="Alpine Linux v3.20"\\nID=alpine\\n\' > /etc/os-release\n',
      ),
    }).done;
    const err = await rejectsWith(
      t.desk.createSandbox({ name: uniqueName('imgnd'), backend: 'docker', image: t6, options: { desktop: 'true' } }),
      'invalid_input',
    );
    expect(err.message).toMatch(
      /--desktop needs a Debian- or Ubuntu-based image; .* is not: its \/etc\/os-release says Alpine Linux v3.20/,
    );
  });

  it('--desktop on an image derived from sandbox-desk/base builds its desktop variant once (with progress), then desktop start gives a first frame', async () => {
    // Kept between runs (not in `tags`): the same content gives the same image id, so the derived image is found again.
    const src = 'sandbox-desk/test-derived-src:1';
    await t.desk.images.buildDocker({
      tag: src,
      context: folder('derived', 'FROM sandbox-desk/base:latest\nCOPY marker.txt /etc/sdtest-marker.txt\n', { 'marker.txt': 'derived\n' }),
    }).done;
    const name = uniqueName('imgdesk');
    const progress: string[] = [];
    const r = await t.desk.createSandbox(
      { name, backend: 'docker', image: src, options: { desktop: 'true' } },
      { onProgress: (e) => progress.push(`${e.step}: ${e.message}`) },
    );
    expect(r.sandbox.image).toMatch(/^sandbox-desk\/derived-desktop:[0-9a-f]{16}$/);
    expect(progress.some((p) => /desktop image/.test(p))).toBe(true);
    const listed = (await t.desk.images.list()).images.find((i) => i.ref === r.sandbox.image)!;
    expect(listed).toMatchObject({ desktop: true, derivedFrom: src, usedBy: [name] });
    expect((await t.desk.exec({ sandbox: name, command: 'cat /etc/sdtest-marker.txt; id -un' })).stdout).toBe('derived\nagent\n');
    // The desktop image's managed Chromium policy came along (issue 36: its browser sends nothing of its own).
    const policy = await t.desk.exec({ sandbox: name, command: 'cat /etc/chromium/policies/managed/sandbox-desk.json' });
    expect(JSON.parse(policy.stdout)).toEqual(
      JSON.parse(readFileSync(resolve(import.meta.dirname, '../../resources/images/desktop/chromium-policy.json'), 'utf8')),
    );
    const status = await t.desk.desktop.start(name);
    expect(status).toMatchObject({ running: true, missing: [] });
    const shot = await t.desk.desktop.screenshot(name);
    expect(shot.frame.width).toBeGreaterThan(0);
    expect(shot.image.subarray(1, 4).toString()).toBe('PNG');
    // A second sandbox from the same image: found by its tag, no build.
    const again: string[] = [];
    const r2 = await t.desk.createSandbox(
      { name: uniqueName('imgdesk'), backend: 'docker', image: src, options: { desktop: 'true' }, start: false },
      { onProgress: (e) => again.push(e.message) },
    );
    expect(r2.sandbox.image).toBe(r.sandbox.image);
    expect(again.join('\n')).toMatch(/is built already/);
    await t.desk.desktop.stop(name);
  }, 900_000);
});
