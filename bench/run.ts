/**
 * `npm run bench` runs every benchmark in bench/ (alphabetically); `npm run bench -- NAME` runs only
 * bench/NAME.ts. A benchmark that throws is reported and the others still run; the exit code is then 1.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { printTable, writeResult, type BenchModule } from './harness.js';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
// vm-desktop.ts is a part of vm.ts (the desktop VM's figures), not a benchmark of its own.
const NOT_BENCHMARKS = new Set(['harness.ts', 'run.ts', 'vm-desktop.ts']);

const available = readdirSync(BENCH_DIR)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts') && !NOT_BENCHMARKS.has(f))
  .map((f) => f.slice(0, -'.ts'.length))
  .sort();

const asked = process.argv.slice(2);
const unknown = asked.filter((n) => !available.includes(n));
if (unknown.length > 0) {
  console.error(`unknown benchmark${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`);
  console.error(`available: ${available.join(', ')}`);
  process.exit(2);
}

let failed = 0;
for (const file of asked.length > 0 ? asked : available) {
  console.log(`\n=== bench: ${file} ===`);
  try {
    const mod = (await import(pathToFileURL(join(BENCH_DIR, `${file}.ts`)).href)) as BenchModule;
    const t0 = performance.now();
    const metrics = await mod.default();
    const name = mod.name ?? file;
    printTable(name, metrics);
    console.log(`wrote ${writeResult(name, metrics)} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (err) {
    failed++;
    console.error(`bench ${file} failed:`, err);
  }
}
// Set the code rather than exit: pending handles (docker sockets) close on their own after dispose.
process.exitCode = failed > 0 ? 1 : 0;
