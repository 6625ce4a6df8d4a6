import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fallbackLine, findElectronBinary, findOnPath } from './start-app.js';

const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sdesk-start-unit-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('findElectronBinary', () => {
  it('is null when the package has no path.txt (binary download skipped)', () => {
    const root = tmp();
    mkdirSync(join(root, 'node_modules', 'electron'), { recursive: true });
    expect(findElectronBinary({}, root)).toBeNull();
  });

  it('is null when path.txt names a binary that is not there', () => {
    const root = tmp();
    const pkg = join(root, 'node_modules', 'electron');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'path.txt'), 'electron');
    expect(findElectronBinary({}, root)).toBeNull();
  });

  it('finds dist/<path.txt> when it exists', () => {
    const root = tmp();
    const pkg = join(root, 'node_modules', 'electron');
    mkdirSync(join(pkg, 'dist'), { recursive: true });
    writeFileSync(join(pkg, 'path.txt'), 'electron');
    writeFileSync(join(pkg, 'dist', 'electron'), '');
    expect(findElectronBinary({}, root)).toBe(join(pkg, 'dist', 'electron'));
  });

  it('SANDBOX_DESK_ELECTRON_BINARY overrides, and a missing override is "not installed"', () => {
    const d = tmp();
    writeFileSync(join(d, 'my-electron'), '');
    expect(findElectronBinary({ SANDBOX_DESK_ELECTRON_BINARY: join(d, 'my-electron') }, d)).toBe(join(d, 'my-electron'));
    expect(findElectronBinary({ SANDBOX_DESK_ELECTRON_BINARY: join(d, 'nope') }, d)).toBeNull();
  });
});

describe('findOnPath', () => {
  it('finds an executable and skips a non-executable file of the same name', () => {
    const a = tmp();
    const b = tmp();
    writeFileSync(join(a, 'xdg-open-marker'), '');
    writeFileSync(join(b, 'xdg-open-marker'), '#!/bin/sh\n');
    chmodSync(join(b, 'xdg-open-marker'), 0o755);
    expect(findOnPath('xdg-open-marker', { PATH: `${a}:${b}` })).toBe(join(b, 'xdg-open-marker'));
    expect(findOnPath('xdg-open-marker', { PATH: a })).toBeNull();
    expect(findOnPath('xdg-open-marker', {})).toBeNull();
  });
});

it('the fallback is one line that says why and what happens instead', () => {
  for (const r of ['missing', 'no-display'] as const) {
    expect(fallbackLine(r)).not.toContain('\n');
    expect(fallbackLine(r)).toMatch(/browser mode/);
  }
  expect(fallbackLine('missing')).toMatch(/Electron binary is not installed/);
});
