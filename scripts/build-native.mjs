#!/usr/bin/env node
// Builds the project's compiled programs into dist/native/ (part of `npm run build`; `npm test` runs it
// first too): the egress proxy's data path (src/sandbox/network/pump/*.c) and the service's peer-uid
// check (src/service/native/peer-cred.c). Rebuilt only when
// a source is newer than the binary. CC picks the compiler (default: cc); the unit test of the pump
// also compiles its sources with -Werror.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const programs = [
  { dir: 'src/sandbox/network/pump', binary: 'dist/native/egress-pump' },
  { dir: 'src/service/native', binary: 'dist/native/peer-cred' },
];

for (const { dir, binary } of programs) {
  const sources = readdirSync(join(root, dir)).filter((f) => /\.[ch]$/.test(f));
  const out = join(root, binary);
  const newest = Math.max(...sources.map((f) => statSync(join(root, dir, f)).mtimeMs));
  if (existsSync(out) && statSync(out).mtimeMs >= newest) continue;
  mkdirSync(dirname(out), { recursive: true });
  const cc = process.env.CC || 'cc';
  const tmp = `${out}.${process.pid}.tmp`;
  try {
    const units = sources.filter((f) => f.endsWith('.c')).map((f) => join(root, dir, f));
    execFileSync(cc, ['-O2', '-Wall', '-Wextra', '-o', tmp, ...units], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (e) {
    console.error(
      `build-native: ${cc} could not build ${dir} (${e.code === 'ENOENT' ? `no ${cc} on this machine: \`npm run setup\` installs one` : e.message.split('\n')[0]})`,
    );
    process.exit(1);
  }
  // Renamed into place: a proxy starting meanwhile runs the old binary or the new, never half of one.
  renameSync(tmp, out);
  console.log(`build-native: built ${binary}`);
}
