#!/usr/bin/env node
// The `sandbox-desk` command. The CLI is compiled TypeScript (dist/); `npm run setup` builds it.
import { existsSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Node ≥ 22.1 (Electron's) keeps compiled code between runs: a CLI started thousands of times by an
// agent skips re-compiling its modules. Absent on Node 20: nothing to do there. A per-user directory,
// not Node's default in the shared temp dir.
module.enableCompileCache?.(join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'sandbox-desk', 'node-compile-cache'));

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('sandbox-desk: the CLI is not built yet — run `npm run build` (or `npm run setup`) in the checkout\n');
  process.exit(125);
}
const argv = process.argv.slice(2);
// `exec NAME [plain flags] -- …` skips the full parser's module graph (src/cli/fast-exec.ts); any other
// shape — or a log that must be written — gives null and goes through the full CLI below. The fast path
// is one bundled file (scripts/bundle-cli.mjs, part of `npm run build`); after a bare `tsc -b` without
// it, the same code from tsc's many files.
let code = null;
if (argv[0] === 'exec') {
  const bundle = new URL('../dist/src/cli/fast-exec.bundle.js', import.meta.url);
  const fast = existsSync(fileURLToPath(bundle)) ? bundle : new URL('../dist/src/cli/fast-exec.js', import.meta.url);
  const { fastExec } = await import(fast.href);
  code = await fastExec(argv);
}
if (code === null) {
  const { main } = await import(entry.href);
  code = await main(argv);
}
process.exitCode = code;
