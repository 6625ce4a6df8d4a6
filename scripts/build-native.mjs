#!/usr/bin/env node
// Builds the project's compiled programs into dist/native/ (part of `npm run build`; `npm test` runs it
// first too): today one, the egress proxy's data path (src/sandbox/network/egress-pump.c). Rebuilt
// only when the source is newer than the binary. `--strict` also fails on any compiler warning (the
// unit test that holds the C source to that runs it). CC picks the compiler (default: cc).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const strict = process.argv.includes('--strict');
const programs = [{ source: 'src/sandbox/network/egress-pump.c', binary: 'dist/native/egress-pump' }];

for (const { source, binary } of programs) {
  const src = join(root, source);
  const out = join(root, binary);
  if (!strict && existsSync(out) && statSync(out).mtimeMs >= statSync(src).mtimeMs) continue;
  mkdirSync(dirname(out), { recursive: true });
  const cc = process.env.CC || 'cc';
  const tmp = `${out}.${process.pid}.tmp`;
  try {
    execFileSync(cc, ['-O2', '-Wall', '-Wextra', ...(strict ? ['-Werror'] : []), '-o', tmp, src], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  } catch (e) {
    console.error(
      `build-native: ${cc} could not build ${source} (${e.code === 'ENOENT' ? `no ${cc} on this machine: \`npm run setup\` installs one` : e.message.split('\n')[0]})`,
    );
    process.exit(1);
  }
  // Renamed into place: a proxy starting meanwhile runs the old binary or the new, never half of one.
  renameSync(tmp, out);
  if (strict) continue;
  console.log(`build-native: built ${binary}`);
}
