/**
 * Shared helpers for the benchmarks in this folder. A benchmark module exports
 * `export const name = '...'` and `export default async function run(): Promise<Metric[]>`;
 * bench/run.ts prints and stores what it returns.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ExecResult } from '../src/api/contract.js';
import { SandboxDesk } from '../src/api/sandbox-desk.js';

export interface Metric {
  name: string;
  unit: string;
  value: number;
  baseline: number | null;
  /** How many times better than the baseline (>1 = better), whatever the unit's direction. */
  ratio: number | null;
  /** Printed and written beside the figure, e.g. the accel a VM figure was measured under. */
  note?: string;
}

export interface BenchModule {
  name: string;
  default: () => Promise<Metric[]>;
}

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'results');

/** Units where a larger number is better; everything else (ms, s, bytes…) is lower-is-better. */
const HIGHER_IS_BETTER = new Set(['fps', 'ops/s', 'req/s', 'MB/s', 'MiB/s']);

/** Runs `fn` `warmup` times untimed, then `runs` times timed; returns the samples in ms, ascending. */
export async function measure(fn: () => unknown, opts: { warmup?: number; runs: number }): Promise<number[]> {
  for (let i = 0; i < (opts.warmup ?? 0); i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < opts.runs; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return samples.sort((a, b) => a - b);
}

/** Nearest-rank percentile (p in 0..100) of samples sorted ascending. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new Error('percentile of no samples');
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Median of samples sorted ascending (mean of the two middle ones for an even count). */
export function median(sorted: readonly number[]): number {
  if (sorted.length === 0) throw new Error('median of no samples');
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** How many times better `value` is than `baseline`, in the unit's direction. */
export function ratioFor(unit: string, value: number, baseline: number | null): number | null {
  if (baseline === null || value === 0 || baseline === 0) return null;
  return HIGHER_IS_BETTER.has(unit) ? value / baseline : baseline / value;
}

/** Builds a metric with its ratio filled in. */
export function metric(name: string, unit: string, value: number, baseline: number | null = null): Metric {
  return { name, unit, value, baseline, ratio: ratioFor(unit, value, baseline) };
}

export function machineInfo(): string {
  const cpu = cpus();
  const gib = totalmem() / 1024 ** 3;
  return `${cpu[0]?.model.trim() ?? 'unknown cpu'}, ${cpu.length} cores, ${gib.toFixed(1)} GiB, node ${process.version}`;
}

const fmt = (n: number | null): string => (n === null ? '-' : n.toFixed(2));

export function printTable(name: string, metrics: readonly Metric[]): void {
  const rows = [
    ['metric', 'value', 'unit', 'baseline', 'ratio'],
    ...metrics.map((m) => [
      m.name,
      fmt(m.value),
      m.unit,
      fmt(m.baseline),
      `${m.ratio === null ? '-' : `${m.ratio.toFixed(1)}×`}${m.note ? `  (${m.note})` : ''}`,
    ]),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  // Names and units left-aligned, numbers right-aligned.
  const line = (r: string[]) => r.map((cell, c) => (c === 0 || c === 2 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ');
  console.log(`\n${name}  (${machineInfo()})`);
  console.log(line(rows[0]!));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows.slice(1)) console.log(line(r));
}

const round2 = (n: number | null): number | null => (n === null ? null : Math.round(n * 100) / 100);

/** Writes bench/results/NAME.json; returns its path. */
export function writeResult(name: string, metrics: readonly Metric[]): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${name}.json`);
  const body = {
    name,
    machine: machineInfo(),
    metrics: metrics.map((m) => ({
      name: m.name,
      unit: m.unit,
      value: round2(m.value),
      baseline: round2(m.baseline),
      ratio: round2(m.ratio),
      ...(m.note ? { note: m.note } : {}),
    })),
  };
  writeFileSync(file, JSON.stringify(body, null, 2) + '\n');
  return file;
}

// ---- sandbox helpers ---------------------------------------------------------------------------

const execFileP = promisify(execFile);

/** Runs the docker CLI to completion (stdin closed at once, as `docker exec -i` would otherwise wait on it). */
export async function docker(args: string[]): Promise<string> {
  const p = execFileP('docker', args);
  p.child.stdin?.end();
  return (await p).stdout;
}

export function uniqueName(prefix = 'bench'): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/**
 * Runs `fn` with a SandboxDesk on a fresh temporary data dir; afterwards — also on error — removes
 * every sandbox it still knows, closes it and deletes the dir.
 */
export async function withTempDesk<T>(fn: (desk: SandboxDesk) => Promise<T>): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sdesk-bench-'));
  const desk = new SandboxDesk({ dataDir });
  try {
    return await fn(desk);
  } finally {
    for (const s of desk.store.sandboxes.list()) {
      await desk.removeSandbox(s.name, { force: true }).catch((err) => console.error(`cleanup: could not remove ${s.name}:`, err));
    }
    await desk.close().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Creates and starts a docker sandbox; returns its name and container id. */
export async function dockerSandbox(desk: SandboxDesk): Promise<{ name: string; containerId: string }> {
  const name = uniqueName();
  await desk.createSandbox({ name, backend: 'docker' });
  const containerId = (await desk.inspectSandbox(name)).backendRef;
  if (!containerId) throw new Error(`sandbox ${name} has no container id`);
  return { name, containerId };
}

/** Fails loudly when a timed command did not do what it should, or silently left the persistent shell. */
export function check(r: ExecResult, opts: { stdout?: string; shell?: boolean } = {}): void {
  if (r.exitCode !== 0) throw new Error(`command exited ${r.exitCode}: ${r.stderr}`);
  if (opts.stdout !== undefined && r.stdout.trim() !== opts.stdout) throw new Error(`unexpected stdout ${JSON.stringify(r.stdout)}`);
  if (opts.shell && r.warnings.some((w) => w.code === 'shell_fallback')) throw new Error('persistent shell fell back to one-shot');
}

/**
 * A page of a benchmark's own on this machine's loopback: `html` at every path except those `fileFor`
 * maps to a file (modules and styles straight from node_modules). Its origin is what a LocalServer is
 * told to accept in `extraOrigins`.
 */
export async function benchPage(html: string, fileFor: (path: string) => string | null): Promise<{ origin: string; close: () => void }> {
  const server = createServer((req, res) => {
    const path = normalize(new URL(req.url ?? '/', 'http://x').pathname);
    const file = fileFor(path);
    if (file && existsSync(file)) {
      res.writeHead(200, { 'Content-Type': file.endsWith('.css') ? 'text/css' : 'text/javascript' });
      res.end(readFileSync(file));
    } else {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(html);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { origin: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => server.close() };
}

// ---- the CLI and its service on a data dir of the benchmark's own ------------------------------

export interface CliHome {
  home: string;
  /** SANDBOX_DESK_HOME set, no XDG_RUNTIME_DIR: the service's socket is under `home`, the service this benchmark's own. */
  env: NodeJS.ProcessEnv;
  /** The CLI's argv (`node bin/sandbox-desk.js`) before its arguments. */
  argv: string[];
  /** Runs the CLI to completion; throws with its stderr when it fails. */
  cli(...args: string[]): { stdout: string; ms: number };
  /** The running service's pid (from its lock). */
  servicePid(): number;
  /** Sandboxes to remove at the end. */
  made: string[];
}

/**
 * Runs `fn` against the CLI as a user runs it, on a fresh data dir (its own service, started on
 * demand by the first call); afterwards removes the sandboxes in `made`, stops the service and
 * deletes the dir.
 */
export async function withCliHome<T>(fn: (h: CliHome) => Promise<T>): Promise<T> {
  const home = mkdtempSync(join(tmpdir(), 'sdesk-bench-cli-'));
  const env: NodeJS.ProcessEnv = { ...process.env, SANDBOX_DESK_HOME: home, XDG_RUNTIME_DIR: '' };
  const argv = [resolve(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'sandbox-desk.js')];
  const pids = new Set<number>();
  const h: CliHome = {
    home,
    env,
    argv,
    made: [],
    cli: (...args) => {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, [...argv, ...args], { env, encoding: 'utf8', timeout: 120_000 });
      if (r.status !== 0) throw new Error(`sandbox-desk ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
      return { stdout: r.stdout, ms: performance.now() - t0 };
    },
    servicePid: () => {
      const pid = (JSON.parse(readFileSync(join(home, 'service.lock'), 'utf8')) as { pid: number }).pid;
      pids.add(pid);
      return pid;
    },
  };
  try {
    return await fn(h);
  } finally {
    for (const sb of h.made) {
      const r = spawnSync(process.execPath, [...argv, 'sandbox', 'rm', sb, '--force'], { env, encoding: 'utf8', timeout: 120_000 });
      if (r.status !== 0) console.error(`cleanup: could not remove ${sb}: ${r.stderr}`);
    }
    spawnSync(process.execPath, [...argv, 'service', 'stop', '--force'], { env, encoding: 'utf8', timeout: 60_000 });
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    rmSync(home, { recursive: true, force: true });
  }
}
