import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxDesk } from '../api/sandbox-desk.js';
import { logFileOf } from '../sandbox/network/network-files.js';
import type { NetworkLogEntry } from '../shared/network-policy.js';
import { main } from './main.js';

/** `network log` and `sandbox network` against a real core on a throw-away home (a local sandbox: no engine needed). */
describe('network log and sandbox network (CLI)', () => {
  let home: string;
  const run = async (argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await main(
      argv,
      { stdout: (s) => void (stdout += String(s)), stderr: (s) => void (stderr += String(s)) },
      (o) => new SandboxDesk({ ...o, dataDir: home, plugins: false }),
      { ...process.env, SANDBOX_DESK_HOME: home },
    );
    return { code, stdout, stderr };
  };

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-netcli-'));
    const desk = new SandboxDesk({ dataDir: home, plugins: false });
    await desk.createSandbox({ name: 'box', backend: 'local', defaultCwd: '/tmp' });
    await desk.close();
    const at = '2026-01-01T00:00:00.000Z';
    // Two lines as the proxy's pump writes them (pump/journal.c).
    const lines: NetworkLogEntry[] = [
      { at, sandbox: 'box', host: 'a.com', port: 443, verdict: 'allowed', kind: 'connect', reason: null, process: null },
      { at, sandbox: 'box', host: 'b.com', port: 80, verdict: 'denied', kind: 'http', reason: 'not on the allow list', process: null },
      {
        at,
        sandbox: 'box',
        host: 'api.c.com',
        port: 443,
        verdict: 'denied',
        kind: 'connect',
        reason: 'not on the allow list',
        process: 'curl',
      },
    ];
    mkdirSync(dirname(logFileOf(home, 'box')), { recursive: true });
    writeFileSync(logFileOf(home, 'box'), lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('prints the log oldest first, as lines or JSON', async () => {
    const text = await run(['network', 'log', 'box']);
    expect(text.code).toBe(0);
    expect(text.stdout.split('\n').slice(0, 2).join('\n')).toBe(
      `${at()}  ALLOW  a.com:443  connect\n${at()}  DENY   b.com:80  http  (not on the allow list)`,
    );
    const json = await run(['network', 'log', 'box', '--json', '--limit', '1']);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ host: 'api.c.com', verdict: 'denied' })]);
  });

  it('filters: --denied, --process, --host (the newest matches, not the matches among the newest)', async () => {
    const hosts = async (...flags: string[]) =>
      (JSON.parse((await run(['network', 'log', 'box', '--json', ...flags])).stdout) as NetworkLogEntry[]).map((e) => e.host);
    expect(await hosts('--denied')).toEqual(['b.com', 'api.c.com']);
    expect(await hosts('--process', 'CURL')).toEqual(['api.c.com']);
    expect(await hosts('--host', 'c.com')).toEqual(['api.c.com']);
    expect(await hosts('--host', 'a.com', '--denied')).toEqual([]);
    expect(await hosts('--denied', '--limit', '1')).toEqual(['api.c.com']);
    expect(await hosts('--host', 'a.com', '--limit', '1')).toEqual(['a.com']);
    expect((await run(['network', 'log', 'box', '--process', 'wget'])).stdout).toMatch(/No connections of box match/);
  });

  it('shows the policy; a backend that cannot enforce a mode refuses it with the reason (exit 125)', async () => {
    expect((await run(['sandbox', 'network', 'box'])).stdout).toBe('box: network open\n');
    const r = await run(['sandbox', 'network', 'box', '--mode', 'offline']);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/the local backend cannot enforce network mode offline/);
    expect((await run(['sandbox', 'inspect', 'box', '--json'])).stdout).toContain('"network": {\n    "mode": "open"');
  });

  it('an unknown sandbox is named (exit 125)', async () => {
    const r = await run(['network', 'log', 'nope']);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/no sandbox named nope/);
  });
});

const at = (): string => '2026-01-01T00:00:00.000Z';
