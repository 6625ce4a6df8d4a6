import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxDesk } from '../api/sandbox-desk.js';
import type { CoreEvent } from '../api/contract.js';
import type { DeskClient } from '../client/http-client.js';
import { createDesk, type Desk } from '../client/sdk.js';
import { SandboxDeskError } from '../shared/errors.js';
import { openClient } from './cli-client.js';

/**
 * The CLI's client end to end against the real server it reaches today (the interim shim: a
 * LocalServer on loopback over a real core, with a local sandbox — no engine needed), through the
 * SDK's wrappers: what a command gets back, errors as the core threw them, files both ways, events,
 * and an exec cut off by its caller.
 */
let home: string;
let core: SandboxDesk;
let client: DeskClient;
let desk: Desk;
const sb = `cc${process.pid}`;
beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'sdesk-cliclient-'));
  core = new SandboxDesk({ dataDir: home, plugins: false });
  client = await openClient({ core: () => core, env: process.env, ownCore: true });
  desk = createDesk(client);
  await desk.sandboxes.create({ name: sb, backend: 'local', defaultCwd: home });
});
afterAll(async () => {
  await client.close();
  await core.close();
  rmSync(home, { recursive: true, force: true });
});

describe('openClient (interim: the core served on loopback) and the SDK over it', () => {
  it("runs a command: output as bytes exactly, even when it is not UTF-8; the session's cwd moves", async () => {
    const r = await desk.exec(sb, `printf 'a\\377b'; cd /tmp`, { session: 's1' });
    expect(r.exitCode).toBe(0);
    expect(r.encoding.stdout).toBe('base64');
    expect([...r.stdoutBytes]).toEqual([0x61, 0xff, 0x62]);
    expect(r.cwd).toBe('/tmp');
    expect((await desk.exec(sb, 'pwd', { session: 's1' })).stdout).toBe('/tmp\n');
  });

  it("gives the core's errors back with their code, message and hint", async () => {
    const err = await desk.sandboxes.inspect('nope-not-here').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxDeskError);
    expect((err as SandboxDeskError).code).toBe('not_found');
    expect((err as SandboxDeskError).message).toMatch(/nope-not-here/);
    const bad = await client.call('exec', { sandbox: sb, command: '' }).catch((e: unknown) => e);
    expect((bad as SandboxDeskError).code).toBe('invalid_input');
  });

  it('writes a file and reads it back byte for byte over the transfer routes', async () => {
    const data = Buffer.from([0, 1, 2, 250, 255, 10]);
    const w = await desk.files.write(sb, `up-${process.pid}.bin`, data, { dir: home });
    expect(w).toEqual({ path: join(home, `up-${process.pid}.bin`), bytes: 6 });
    expect([...(await desk.files.read(sb, w.path))]).toEqual([...data]);
    const missing = await desk.files.read(sb, join(home, 'nothing-here')).catch((e: unknown) => e);
    expect((missing as SandboxDeskError).code).toBe('not_found');
  });

  it('streams events: a session made is seen on /ws/events', async () => {
    const abort = new AbortController();
    const seen: CoreEvent[] = [];
    // Sessions are made until the stream (opened by the loop below) has shown one: no guess at when it is open.
    let n = 0;
    const making = setInterval(() => void desk.sessions.create(sb, `ev-session-${n++}`, { cwd: '/tmp' }).catch(() => undefined), 150);
    try {
      for await (const e of desk.events({ signal: abort.signal })) {
        seen.push(e);
        if (JSON.stringify(e).includes('ev-session-')) abort.abort();
      }
    } finally {
      clearInterval(making);
    }
    expect(seen.some((e) => JSON.stringify(e).includes('ev-session-'))).toBe(true);
  });

  it('an exec whose caller gives up is interrupted in the sandbox, not left running', async () => {
    const marker = `/tmp/sdesk-cc-${process.pid}-${Date.now()}`;
    const abort = new AbortController();
    const running = client.call('exec', { sandbox: sb, command: `sleep 3 && touch ${marker}` }, { signal: abort.signal });
    setTimeout(() => abort.abort(), 300);
    const err = await running.catch((e: unknown) => e);
    expect((err as SandboxDeskError).code).toBe('cancelled');
    await new Promise((r) => setTimeout(r, 3500));
    const { existsSync } = await import('node:fs');
    expect(existsSync(marker)).toBe(false);
  });
});
