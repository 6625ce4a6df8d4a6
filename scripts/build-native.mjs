#!/usr/bin/env node
// Builds the project's compiled programs into dist/native/ (part of `npm run build`; `npm test` runs it
// first too): the egress proxy's data path (src/sandbox/network/pump/*.c, a program) and the service's
// peer-uid check (src/service/native/peer-cred-addon.c, a Node-API addon loaded in-process, compiled
// against the `node-api-headers` devDependency). Rebuilt only when a source is newer than the output.
// CC picks the compiler (default: cc); the unit test of the pump also compiles its sources with -Werror.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The Node-API headers the addon is compiled against (a devDependency: one pinned version, not the machine's). */
function napiInclude() {
  try {
    return createRequire(import.meta.url)('node-api-headers').include_dir;
  } catch {
    console.error('build-native: the Node-API headers are missing (devDependency node-api-headers): run `npm install` in the checkout');
    process.exit(1);
  }
}

const programs = [
  { dir: 'src/sandbox/network/pump', binary: 'dist/native/egress-pump', flags: () => [] },
  // -shared -fPIC: a shared object; its napi_* symbols resolve from the Node (or Electron) that loads it.
  { dir: 'src/service/native', binary: 'dist/native/peer-cred.node', flags: () => ['-shared', '-fPIC', '-I', napiInclude()] },
];

// The per-connection helper program the addon replaced: a stale copy must not look like a live part.
rmSync(join(root, 'dist/native/peer-cred'), { force: true });

for (const { dir, binary, flags } of programs) {
  const sources = readdirSync(join(root, dir)).filter((f) => /\.[ch]$/.test(f));
  const out = join(root, binary);
  const newest = Math.max(...sources.map((f) => statSync(join(root, dir, f)).mtimeMs));
  if (existsSync(out) && statSync(out).mtimeMs >= newest) continue;
  mkdirSync(dirname(out), { recursive: true });
  const cc = process.env.CC || 'cc';
  const tmp = `${out}.${process.pid}.tmp`;
  try {
    const units = sources.filter((f) => f.endsWith('.c')).map((f) => join(root, dir, f));
    execFileSync(cc, ['-O2', '-Wall', '-Wextra', ...flags(), '-o', tmp, ...units], { stdio: ['ignore', 'inherit', 'inherit'] });
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
