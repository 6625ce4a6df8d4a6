/**
 * The egress pump parses bytes a sandbox chose; it must do so without root's powers (issue 35, item 13).
 * The test starts its own pump (the built binary, or SANDBOX_DESK_EGRESS_PUMP) and reads what the kernel
 * says of it in /proc/PID/status: the parsing process has no capability in any set, no_new_privs and a
 * seccomp filter; its lookup helper keeps the four capabilities a process lookup needs and nothing
 * else, under a filter of its own. That calls outside the allow-list are refused is asked of the pump itself (its `probe`
 * command makes three calls no capability is needed for: each would succeed, or fail otherwise than
 * with EPERM, were it allowed). Then the proxy daemon as the app starts it: no_new_privs, and no
 * capability beyond what its pump's helper needs.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pumpBinary } from '../../src/sandbox/network/egress-pump.js';
import { writePolicies } from '../../src/sandbox/network/network-files.js';
import { ensureProxy } from '../../src/sandbox/network/proxy-supervisor.js';

const root = process.getuid?.() === 0;
/** CAP_DAC_READ_SEARCH (2), CAP_NET_ADMIN (12), CAP_SYS_PTRACE (19), CAP_SYS_ADMIN (21). */
const HELPER_CAPS = (1n << 2n) | (1n << 12n) | (1n << 19n) | (1n << 21n);

/** The Cap*, NoNewPrivs and Seccomp fields of a process's status. */
function status(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(Cap\w+|NoNewPrivs|Seccomp):\s*(\S+)/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

function children(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
}

/** Polls `f` until it returns non-undefined (a readiness check, not a sleep), for up to `ms`. */
async function until<T>(f: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the egress pump runs without root’s powers (issue 35, item 13)', () => {
  let pump: ChildProcessWithoutNullStreams;
  const lines: string[] = [];

  beforeAll(async () => {
    const binary = pumpBinary();
    if (!binary) throw new Error('no egress pump: `npm run build` builds it');
    pump = spawn(binary, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    createInterface({ input: pump.stdout }).on('line', (l) => lines.push(l));
    await until(() => (lines.includes('ready') ? true : undefined));
  });
  afterAll(() => {
    pump.stdin.end();
    pump.kill();
  });

  it('the parsing process: no capability in any set, no_new_privs, a seccomp filter', () => {
    const s = status(pump.pid!);
    expect(s).toMatchObject({
      CapInh: '0000000000000000',
      CapPrm: '0000000000000000',
      CapEff: '0000000000000000',
      CapAmb: '0000000000000000',
      NoNewPrivs: '1',
      Seccomp: '2',
    });
    // Emptying the bounding set needs CAP_SETPCAP: as root it is done; otherwise there was nothing in it to use.
    if (root) expect(s.CapBnd).toBe('0000000000000000');
  });

  it('its lookup helper keeps only what a process lookup needs, with no_new_privs and its own seccomp filter', async () => {
    const [helper] = children(pump.pid!);
    expect(helper).toBeGreaterThan(0);
    // The helper confines itself as it starts: read once it has (the seccomp filter is its last step).
    const s = await until(() => {
      const st = status(helper!);
      return st.Seccomp === '2' ? st : undefined;
    });
    const expected = root ? HELPER_CAPS : 0n;
    expect(BigInt(`0x${s.CapPrm}`)).toBe(expected);
    expect(BigInt(`0x${s.CapEff}`)).toBe(expected);
    expect(BigInt(`0x${s.CapInh}`)).toBe(0n);
    if (root) expect(BigInt(`0x${s.CapBnd}`)).toBe(HELPER_CAPS);
    expect(s.Seccomp).toBe('2');
  });

  it('calls outside the seccomp allow-list are refused (netlink sockets, execve, unshare)', async () => {
    pump.stdin.write('probe\n');
    const probed = await until(() => lines.find((l) => l.startsWith('probed')));
    expect(probed).toBe('probed socket-netlink=EPERM execve=EPERM unshare=EPERM');
    // And the pump lives on: a refused call is an error it handles, not its end.
    expect(pump.exitCode).toBeNull();
  });
});

describe('the proxy daemon as the app starts it (issue 35, item 13)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sdpriv-'));
  let pid = 0;

  afterAll(() => {
    // Its data directory gone, the daemon exits by itself; the signal makes it now.
    rmSync(dataDir, { recursive: true, force: true });
    if (pid) process.kill(pid, 'SIGTERM');
  });

  it('runs with no_new_privs and no capability beyond its pump helper’s (and CAP_SETPCAP, for the pump to drop them)', async () => {
    writePolicies(dataDir, { sb: { mode: 'allow', allow: [] } });
    ({ pid } = await ensureProxy(dataDir, ['sb']));
    const s = status(pid);
    expect(s.NoNewPrivs).toBe('1');
    const allowed = root ? HELPER_CAPS | (1n << 8n) : 0n;
    expect(BigInt(`0x${s.CapBnd}`) & ~allowed).toBe(0n);
    expect(BigInt(`0x${s.CapEff}`) & ~allowed).toBe(0n);
    // Its pump: nothing at all.
    const pump = await until(() => children(pid)[0]);
    const p = await until(() => {
      const st = status(pump);
      return st.Seccomp === '2' ? st : undefined;
    });
    expect(p).toMatchObject({ CapEff: '0000000000000000', CapPrm: '0000000000000000', NoNewPrivs: '1' });
  });
});
