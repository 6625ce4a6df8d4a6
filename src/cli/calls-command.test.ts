import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxDesk } from '../api/sandbox-desk.js';
import { CALL_LOG_PAGE } from './call-log-reader.js';
import { openClient } from './cli-client.js';
import { main } from './main.js';

/**
 * `sandbox-desk calls` (alias `log`) is a client of the service like every other command (issue 34):
 * it builds no core of its own. Here the CLI's "service" is a real core served on loopback (the client
 * the CLI's own --plugin path uses), and the CLI's core factory throws: a command that reached for a
 * core instead of its client fails.
 */
describe('calls / log (CLI): read through the client only', () => {
  let home: string;
  let core: SandboxDesk;
  // More than one `callLog` answer holds: --jsonl and a large --limit page back through the log.
  const TOTAL = CALL_LOG_PAGE + 26; // even: the last call is odd's

  const run = async (argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await main(
      argv,
      { stdout: (s) => void (stdout += String(s)), stderr: (s) => void (stderr += String(s)) },
      () => {
        throw new Error('the CLI built a core of its own');
      },
      { ...process.env, SANDBOX_DESK_HOME: home },
      (o) => openClient({ ...o, core: () => core, ownCore: true }),
    );
    return { code, stdout, stderr };
  };

  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'sdesk-calls-'));
    core = new SandboxDesk({ dataDir: home, plugins: false });
    for (let i = 0; i < TOTAL; i++) {
      core.store.callLog.append({
        at: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
        sandbox: i % 2 === 0 ? 'even' : 'odd',
        session: i === TOTAL - 1 ? 'last' : 'agent',
        tool: 'execute_shell_command',
        cwdUsed: '/tmp',
        cwdObserved: i === TOTAL - 1 ? '/var/log' : '/tmp',
        exitCode: i === TOTAL - 1 ? 2 : 0,
        warnings: i === TOTAL - 1 ? [{ code: 'cwd_missing', message: 'gone' }] : [],
        error: null,
        durationMs: 5,
      });
    }
  }, 60_000);
  afterAll(async () => {
    await core.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('prints the last calls as lines, with cwd moves, exit codes and warnings', async () => {
    const r = await run(['calls', '--limit', '2']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe(
      `${new Date(Date.UTC(2026, 0, 1, 0, 0, 0, TOTAL - 1)).toISOString()}  odd  last  execute_shell_command  /tmp → /var/log  exit 2  [cwd_missing]`,
    );
    // `log` is the same command.
    expect((await run(['log', '--limit', '2'])).stdout).toBe(r.stdout);
  });

  it('filters by sandbox and session; --json gives the entries as stored', async () => {
    const json = JSON.parse((await run(['calls', 'odd', '--session', 'last', '--json'])).stdout) as Array<Record<string, unknown>>;
    expect(json).toEqual([
      expect.objectContaining({ id: TOTAL, sandbox: 'odd', session: 'last', cwdUsed: '/tmp', cwdObserved: '/var/log', exitCode: 2 }),
    ]);
    expect(Object.keys(json[0]!)).toEqual([
      'id',
      'at',
      'sandbox',
      'session',
      'tool',
      'cwdUsed',
      'cwdObserved',
      'exitCode',
      'warnings',
      'error',
      'durationMs',
    ]);
    expect((await run(['calls', 'none'])).stdout).toBe('No agent calls logged yet.\n');
  });

  it('--jsonl exports every call, oldest first, beyond one answer of the service; --limit pages back too', async () => {
    const all = (await run(['calls', '--jsonl'])).stdout
      .trimEnd()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: number }).id);
    expect(all).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1));
    const even = (await run(['log', 'even', '--jsonl'])).stdout.trimEnd().split('\n');
    expect(even).toHaveLength(Math.ceil(TOTAL / 2));
    const many = JSON.parse((await run(['calls', '--limit', String(CALL_LOG_PAGE + 10), '--json'])).stdout) as Array<{ id: number }>;
    expect(many).toHaveLength(CALL_LOG_PAGE + 10);
    expect(many[0]!.id).toBe(TOTAL - (CALL_LOG_PAGE + 10) + 1);
    expect(many.at(-1)!.id).toBe(TOTAL);
  });

  it('a --limit that is not a positive whole number is refused, saying what to give (exit 125)', async () => {
    const r = await run(['calls', '--limit', 'lots']);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/--limit "lots" is not a positive whole number/);
  });
});
