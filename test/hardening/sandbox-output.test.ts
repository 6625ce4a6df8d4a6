/**
 * Sandbox-output fuzzer (issue 18): seeded commands that print hostile output — random bytes, NULs,
 * invalid UTF-8, frame-shaped lines with made-up nonces, huge lines, the wrapper's own `__sd_*` names,
 * `set`/`declare -p`/`env` — through both exec modes of a real Docker sandbox. Every case ends by
 * itself in a directory it chose, so each must come back (no crash, no hang) with that cwd observed
 * and, where the output is predictable, exactly that output.
 *
 *   SD_FUZZ_SEED (default 18), SD_FUZZ_CASES (per mode, default 300), SD_FUZZ_BUDGET_S (per mode, 240)
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecMode } from '../../src/api/contract.js';
import { seededRandom } from '../../src/shared/test/seeded-random.js';
import { tempDesk, uniqueName, type TestDesk } from '../integration/helpers.js';

const SEED = Number(process.env.SD_FUZZ_SEED ?? 18);
const CASES = Number(process.env.SD_FUZZ_CASES ?? 300);
const BUDGET_MS = Number(process.env.SD_FUZZ_BUDGET_S ?? 240) * 1000;
/** Per case: generous, so only a real hang (a swallowed end frame) reaches it. */
const CASE_TIMEOUT_S = 30;

/** One piece of a command: its shell text and the stdout it must produce (null: not predictable). */
interface Piece {
  sh: string;
  stdout: Buffer | null;
}

const SD_NAMES = [
  '__sd_n',
  '__sd_t',
  '__sd_tmp',
  '__sd_c',
  '__sd_run',
  '__sd_used',
  '__sd_why',
  '__sd_done',
  '__sd_next',
  '__sd_end',
  '__sd_start',
  '__sd_enter',
  '__sd_cd',
];

function generator(seed: number, dirs: string[]) {
  const r = seededRandom(seed);
  const int = (n: number): number => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const hex = (n: number): string => Array.from({ length: n }, () => '0123456789abcdef'[int(16)]).join('');
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));
  /** Prints exactly these bytes (to stderr when `err`): base64 keeps the command text plain. */
  const emit = (b: Buffer, err = false): Piece => ({
    sh: `base64 -d <<< '${b.toString('base64')}'${err ? ' >&2' : ''}`,
    stdout: err ? Buffer.alloc(0) : b,
  });

  const pieces: Array<() => Piece> = [
    () => emit(bytes(int(2000))),
    () => emit(bytes(int(2000)), true),
    () => emit(Buffer.concat([Buffer.alloc(int(50)), bytes(int(50)), Buffer.alloc(int(50))])),
    // Invalid UTF-8: lone continuation bytes, a cut multi-byte character, overlongs.
    () => emit(Buffer.from([0x80, 0xbf, 0xc3, 0x0a, 0xe2, 0x82, 0xf0, 0x9f, 0x98, 0xc0, 0xaf, 0xff, 0xfe])),
    // Frame-shaped lines with nonces the wrapper never chose.
    () => {
      const n = hex(pick([16, 32, 32, 64]));
      const type = pick(['S', 'E', 'X', 'H']);
      const line = `${n}:${type}:${int(300)}:${pick(['ok', 'gone', 'missing'])}:/forged/${hex(4)}:${n}\n`;
      return emit(Buffer.from(line), r() < 0.3);
    },
    () => {
      const n = hex(32);
      return emit(Buffer.from(`${n}:E:0:ok:${'/x'.repeat(int(40_000))}`));
    },
    // Huge lines, with and without a final newline.
    () => {
      const n = pick([1, 4095, 4096, 16 * 1024, 20_000, 70_000, 200_000]);
      const nl = r() < 0.5;
      return { sh: `head -c ${n} /dev/zero | tr '\\0' c${nl ? '; echo' : ''}`, stdout: Buffer.from('c'.repeat(n) + (nl ? '\n' : '')) };
    },
    () => ({ sh: `head -c ${int(100_000)} /dev/zero`, stdout: null }),
    // The wrapper's own names: printed, used as frame parts, assigned.
    () => {
      const name = pick(SD_NAMES);
      return { sh: `printf '%s:E:0:ok:/forged:%s\\n' "$${name}" "$${name}"; echo "${name}=$${name}"`, stdout: null };
    },
    () => ({ sh: `${pick(SD_NAMES.slice(0, 8))}=${hex(8)}`, stdout: Buffer.alloc(0) }),
    () => ({ sh: pick(['set', 'declare -p', 'env', 'declare -f', 'set; declare -p; env']), stdout: null }),
    () => ({ sh: `printf '%s\\n' "$_" "$@" "$0"`, stdout: null }),
    // Interleaved streams and partial writes.
    () => ({ sh: `for i in 1 2 3; do printf 'o%s' $i; printf 'e%s' $i >&2; done`, stdout: Buffer.from('o1o2o3') }),
  ];

  return (): { command: string; dir: string; exit: number; stdout: Buffer | null } => {
    const parts = Array.from({ length: 1 + int(4) }, () => pick(pieces)());
    const dir = pick(dirs);
    const exit = pick([0, 0, 0, 1, 2, 3, 42]);
    const quoted = `'${dir.replace(/'/g, `'\\''`)}'`;
    const command = [...parts.map((p) => p.sh), `cd ${quoted} && (exit ${exit})`].join('\n');
    const stdout = parts.every((p) => p.stdout) ? Buffer.concat(parts.map((p) => p.stdout!)) : null;
    return { command, dir, exit, stdout };
  };
}

describe('sandbox-output fuzzer', () => {
  let t: TestDesk;
  let sb: string;
  let dirs: string[];
  const summary = { tried: 0, crashes: 0, hangs: 0, wrongCwds: 0, wrongOutput: 0, wrongExit: 0 };
  const failures: string[] = [];

  beforeAll(async () => {
    t = tempDesk();
    sb = uniqueName('fuzz');
    await t.desk.createSandbox({ name: sb, backend: 'docker' });
    const base = `/tmp/fuzz-${randomBytes(4).toString('hex')}`;
    dirs = ['/tmp', '/usr/share', base, `${base}/with space`, `${base}/co:lon`, `${base}/ünï 日本`, `${base}/a'quote`];
    await t.desk.exec({
      sandbox: sb,
      command: `mkdir -p ${dirs
        .slice(2)
        .map((d) => `'${d.replace(/'/g, `'\\''`)}'`)
        .join(' ')}`,
      mode: 'oneshot',
    });
  });
  afterAll(async () => {
    console.log(
      `sandbox-output fuzzer (seed ${SEED}): cases tried ${summary.tried}, crashes ${summary.crashes}, hangs ${summary.hangs}, wrong cwds ${summary.wrongCwds}` +
        ` (wrong exit codes ${summary.wrongExit}, wrong output ${summary.wrongOutput})`,
    );
    await t?.dispose();
  });

  it.each(['shell', 'oneshot'] as ExecMode[])('%s mode: every case comes back with its own cwd observed', async (mode) => {
    const next = generator(SEED + (mode === 'shell' ? 0 : 1), dirs);
    const session = uniqueName('fz');
    const start = Date.now();
    for (let i = 0; i < CASES && Date.now() - start < BUDGET_MS; i++) {
      const c = next();
      summary.tried++;
      const where = `${mode} case ${i}`;
      let r;
      try {
        r = await t.desk.exec({ sandbox: sb, command: c.command, mode, session, timeoutSeconds: CASE_TIMEOUT_S });
      } catch (err) {
        summary.crashes++;
        failures.push(`${where}: threw ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      if (r.timedOut) {
        summary.hangs++;
        failures.push(`${where}: hung (timed out after ${CASE_TIMEOUT_S} s)`);
        continue;
      }
      if (!r.cwdObserved || r.cwd !== c.dir) {
        summary.wrongCwds++;
        failures.push(
          `${where}: cwd ${JSON.stringify(r.cwd)} (observed ${r.cwdObserved}, warnings ${r.warnings.map((w) => w.code).join(',')}), expected ${c.dir}`,
        );
      }
      if (r.exitCode !== c.exit) {
        summary.wrongExit++;
        failures.push(`${where}: exit ${r.exitCode}, expected ${c.exit}`);
      }
      if (c.stdout && !r.truncated.stdout && !r.stdoutBytes.equals(c.stdout)) {
        summary.wrongOutput++;
        failures.push(`${where}: stdout of ${r.stdoutBytes.length} bytes differs from the expected ${c.stdout.length}`);
      }
    }
    expect(failures.slice(0, 20)).toEqual([]);
  });
});
