import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildGraph, checkLayers, fileCycles, folderCycles, formatCycle, formatViolation } from './architecture/layer-check.js';
import { EXCEPTIONS, LAYERS, TESTS_MAY } from './architecture/layer-map.js';

const root = fileURLToPath(new URL('..', import.meta.url));

function walk(dir: string, out: Map<string, string>): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (/\.(ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
      out.set(relative(root, full).split(sep).join('/'), readFileSync(full, 'utf8'));
  }
}

function sources(): Map<string, string> {
  const files = new Map<string, string>();
  for (const top of ['src', 'main', 'renderer', 'plugins']) walk(join(root, top), files);
  return files;
}

describe('architecture', () => {
  const files = sources();
  const edges = buildGraph(files, (p) => existsSync(join(root, p)));
  // A listed exception is not a cycle either: it is on its way out (see EXCEPTIONS).
  const counted = edges.filter((e) => !EXCEPTIONS.some((x) => x.from === e.from && x.to === e.to));

  it('walks the real tree', () => {
    // Guards the walk itself: an empty graph would pass every rule below.
    expect(files.has('src/api/sandbox-desk.ts')).toBe(true);
    expect(edges.length).toBeGreaterThan(100);
  });

  it('has no import that breaks the layer map', () => {
    const violations = checkLayers(LAYERS, edges, { exceptions: EXCEPTIONS, testsMay: TESTS_MAY }).map(formatViolation);
    expect(violations, `layer violations:\n${violations.join('\n')}`).toEqual([]);
  });

  it('lists only exceptions that still exist', () => {
    const stale = EXCEPTIONS.filter((x) => !edges.some((e) => e.from === x.from && e.to === x.to));
    expect(stale, 'delete these exceptions: the import is gone').toEqual([]);
  });

  it('has no import cycle between files', () => {
    const cycles = fileCycles(files.keys(), counted).map(formatCycle);
    expect(cycles, `file cycles:\n${cycles.join('\n')}`).toEqual([]);
  });

  it('has no import cycle between folders', () => {
    const cycles = folderCycles(LAYERS, counted).map(formatCycle);
    expect(cycles, `folder cycles:\n${cycles.join('\n')}`).toEqual([]);
  });

  it('lays the renderer out by feature: its root holds only the entry and the global styles', () => {
    // Each feature (workspace, details, replay, logs, network, checkpoints, files, tasks, …) is a folder
    // with its components, hooks and tests; a new file at the root would start the one big folder again.
    const loose = readdirSync(join(root, 'renderer', 'src'), { withFileTypes: true })
      .filter((e) => e.isFile() && !['main.tsx', 'styles.css', 'theme-light.css'].includes(e.name))
      .map((e) => e.name);
    expect(loose, 'move these into their feature folder under renderer/src/').toEqual([]);
  });
});
