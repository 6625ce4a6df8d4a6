#!/usr/bin/env node
// Bundles the CLI's fast exec path (src/cli/fast-exec.ts and everything it imports) into ONE file,
// dist/src/cli/fast-exec.bundle.js, which bin/sandbox-desk.js loads (part of `npm run build`). Why: a
// cold `sandbox-desk exec` read and compiled 14 small modules before sending its one request; one file
// is one read and one compile (issue 34). The TypeScript modules stay the source of truth: this is a
// build output, rebuilt on every build.
//
// It sits beside fast-exec.js so paths the code derives from its own location (service-info.ts's
// packageRoot: nearest package.json above it) resolve the same. What the fast path loads only on a
// failure (the CLI log: pino, the config schema) stays outside the bundle, imported from the tsc output
// next to it as before.
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

await build({
  entryPoints: [join(root, 'src/cli/fast-exec.ts')],
  outfile: join(root, 'dist/src/cli/fast-exec.bundle.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Loaded lazily by logFailure, from dist/src/cli/ at run time: they pull in node_modules (pino, zod).
  external: ['./cli-log.js', './config-command.js'],
  // Node's own modules are never bundled (platform: node); anything else from node_modules would be a mistake.
  logLevel: 'warning',
  legalComments: 'none',
}).catch(() => process.exit(1));
