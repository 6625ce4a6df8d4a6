/**
 * The screen stream through the sandbox's inbox (src/desktop/inbox.ts), for real: a Docker desktop
 * sandbox gets its inbox folder bound read-only, the screen stream's relay (started through `docker
 * exec` as the desktop's account) reaches the app's socket there, and a real RFB client gets a frame
 * over it; a killed stream leaves no relay in the sandbox. A sandbox made without the mount (as before
 * inboxes) still streams, through the exec's stdio.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerProvider } from '../../src/sandbox/docker/docker-provider.js';
import { LocalProvider } from '../../src/sandbox/local/local-provider.js';
import { ProviderRegistry } from '../../src/sandbox/registry.js';
import { RfbClient, transportFromStreams } from '../../src/desktop/rfb/rfb-client.js';
import type { StreamOpened } from '../../src/desktop/desktop-stream.js';
import type { SandboxDesk } from '../../src/api/sandbox-desk.js';
import { tempDesk, uniqueName, type TestDesk } from './helpers.js';

const IMAGE = 'sandbox-desk/desktop:latest';

/** A frame over the desktop's screen stream; how the stream was opened. */
async function frameOverStream(
  desk: SandboxDesk,
  sb: string,
): Promise<{ opened: StreamOpened[]; width: number; png: Buffer; oneSocket: boolean }> {
  const opened: StreamOpened[] = [];
  const sub = desk.desktop.onStreamOpened((e) => opened.push(e));
  const stream = await desk.desktop.openScreenStream(sb);
  sub.dispose();
  try {
    const rfb = await RfbClient.connect(transportFromStreams(stream.stdout, stream.stdin, () => stream.kill()));
    try {
      const png = await rfb.screenshot();
      return { opened, width: rfb.width, png, oneSocket: (stream.stdout as unknown) === stream.stdin };
    } finally {
      rfb.close();
    }
  } finally {
    stream.kill();
  }
}

const relaysIn = (container: string): number =>
  Number(
    execFileSync('docker', ['exec', container, 'sh', '-c', 'pgrep -fc "sandbox-desk-inbox/inbox-" || true'], { encoding: 'utf8' }).trim(),
  );

describe('the screen stream through the inbox', () => {
  let t: TestDesk;
  const sb = uniqueName('inbox');
  let container: string;

  beforeAll(async () => {
    t = tempDesk();
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: IMAGE });
    await t.desk.desktop.start(sb, { geometry: '1280x800' });
    container = (await t.desk.inspectSandbox(sb)).backendRef!;
  }, 180_000);

  afterAll(async () => {
    await t?.dispose();
  });

  it('binds the inbox read-only: the sandbox sees the app socket but cannot replace it', async () => {
    const mounts = JSON.parse(execFileSync('docker', ['inspect', '-f', '{{json .Mounts}}', container], { encoding: 'utf8' })) as {
      Destination: string;
      RW: boolean;
      Source: string;
    }[];
    const inbox = mounts.find((m) => m.Destination === '/run/sandbox-desk-inbox');
    expect(inbox).toMatchObject({ RW: false });
    expect(inbox!.Source.startsWith(t.dataDir)).toBe(true);
    const r = await t.desk.exec({ sandbox: sb, user: 'root', command: 'touch /run/sandbox-desk-inbox/x 2>&1; echo rc=$?' });
    expect(r.stdout).toMatch(/Read-only file system/);
  });

  it('carries the screen: a real RFB client gets a frame, and the inbox saw the connection', async () => {
    const r = await frameOverStream(t.desk, sb);
    expect(r.opened).toEqual([{ via: 'inbox' }]);
    // One socket both ways (the inbox connection), not a process's stdout and stdin.
    expect(r.oneSocket).toBe(true);
    expect(r.width).toBe(1280);
    expect(r.png.subarray(1, 4).toString()).toBe('PNG');
    // The live agent screen uses it too.
    const shot = await t.desk.desktop.screenshot(sb);
    expect(shot.frame).toMatchObject({ width: 1280, height: 800 });
  });

  it('a killed stream leaves no relay in the sandbox', async () => {
    const stream = await t.desk.desktop.openScreenStream(sb);
    const before = relaysIn(container);
    expect(before).toBeGreaterThanOrEqual(1);
    const closed = new Promise<void>((r) => stream.once('close', r));
    stream.kill();
    await closed;
    const end = Date.now() + 10_000;
    while (relaysIn(container) >= before && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
    expect(relaysIn(container)).toBe(before - 1);
  });

  it('removing the sandbox removes its inbox folder', async () => {
    const mounts = JSON.parse(execFileSync('docker', ['inspect', '-f', '{{json .Mounts}}', container], { encoding: 'utf8' })) as {
      Destination: string;
      Source: string;
    }[];
    const dir = mounts.find((m) => m.Destination === '/run/sandbox-desk-inbox')!.Source;
    expect(existsSync(dir)).toBe(true);
    await t.desk.removeSandbox(sb, { force: true });
    expect(existsSync(dir)).toBe(false);
  });
});

describe('a sandbox without the inbox mount (made before inboxes)', () => {
  let t: TestDesk;
  const sb = uniqueName('noinbox');

  beforeAll(async () => {
    // A Docker provider with no data dir makes containers without the mount, like older builds did.
    const registry = new ProviderRegistry();
    registry.registerBuiltin(new LocalProvider());
    registry.registerBuiltin(new DockerProvider());
    t = tempDesk({ registry });
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: IMAGE });
    await t.desk.desktop.start(sb, { geometry: '1280x800' });
  }, 180_000);

  afterAll(async () => {
    await t?.dispose();
  });

  it('still streams, through the exec stdio, and says why', async () => {
    const r = await frameOverStream(t.desk, sb);
    expect(r.opened).toEqual([{ via: 'stdio', reason: expect.stringContaining('no inbox') }]);
    expect(r.oneSocket).toBe(false);
    expect(r.width).toBe(1280);
    expect(r.png.subarray(1, 4).toString()).toBe('PNG');
  });
});
