#!/usr/bin/env node
// Bundles the CLI's fast exec path (src/cli/fast-exec.ts and everything it imports) into ONE file,
// dist/src/cli/fast-exec.bundle.cjs, which bin/sandbox-desk.js requires (part of `npm run build`). Why: a
// cold `sandbox-desk exec` read and compiled 14 small modules before sending its one request; one file
// is one read and one compile (issue 34). The TypeScript modules stay the source of truth: this is a
// build output, rebuilt on every build.
//
// CommonJS, like the bin: Node 20's ES module loader costs a cold process ~15–30 ms more than require
// (measured on the 2-core CI machine). Two things ESM code has that CommonJS lacks are supplied here:
// - `import.meta.url` (service-info.ts's packageRoot, http-client.ts's createRequire) becomes the
//   bundle's own file URL, computed from __filename in a banner. The bundle sits beside fast-exec.js,
//   so paths derived from its location (the nearest package.json above it) resolve the same.
// - The version (service-info.ts's ownVersion, sent with every call) is inlined from package.json at
//   build time, so the call reads no package.json and walks no directories to find it.
// What the fast path loads only on a failure (the CLI log: pino, the config schema) stays outside the
// bundle, imported (import(): ES modules) from the tsc output next to it as before.
import { build } from 'esbuild';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
// The ES module bundle earlier builds wrote: nothing loads it any more.
rmSync(join(root, 'dist/src/cli/fast-exec.bundle.js'), { force: true });

await build({
  entryPoints: [join(root, 'src/cli/fast-exec.ts')],
  outfile: join(root, 'dist/src/cli/fast-exec.bundle.cjs'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // Loaded lazily by logFailure, from dist/src/cli/ at run time: they pull in node_modules (pino, zod).
  external: ['./cli-log.js', './config-command.js'],
  // Node's own modules are never bundled (platform: node); anything else from node_modules would be a mistake.
  logLevel: 'warning',
  // An import.meta this define does not cover would be empty in CommonJS: fail the build, not a user's call.
  logOverride: { 'empty-import-meta': 'error' },
  legalComments: 'none',
  // See the top: import.meta.url from __filename, the version from package.json.
  define: { 'import.meta.url': '__bundleFileUrl', SANDBOX_DESK_BUNDLED_VERSION: JSON.stringify(version) },
  banner: { js: `'use strict';\nconst __bundleFileUrl = require('node:url').pathToFileURL(__filename).href;` },
}).catch(() => process.exit(1));
