import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | null = null;

/**
 * The checkout (or installed package) this code runs from: the nearest directory above this file with
 * a package.json. Works from src/ under vitest and from dist/src/ when compiled.
 */
export function projectRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the Sandbox Desk package root');
    dir = up;
  }
  return (cached = dir);
}

export function resourcePath(...parts: string[]): string {
  return join(projectRoot(), 'resources', ...parts);
}
