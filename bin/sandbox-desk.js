#!/usr/bin/env node
// The `sandbox-desk` command. The CLI is compiled TypeScript (dist/); `npm run setup` builds it.
//
// CommonJS on purpose (bin/package.json says so for this folder; the package itself is ESM): Node 20
// starts a CommonJS entry ~15–30 ms sooner than an ES module one, which is most of what separated
// `sandbox-desk exec NAME -- true` from `docker exec` (issue 34, bench/cli-exec.ts). The name stays
// bin/sandbox-desk.js so the PATH links setup made (and package.json's "bin") keep working.
'use strict';
const { existsSync } = require('node:fs');
const { homedir } = require('node:os');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

// Node ≥ 22.1 (Electron's) keeps compiled code between runs: a CLI started thousands of times by an
// agent skips re-compiling its modules. Absent on Node 20: nothing to do there. A per-user directory,
// not Node's default in the shared temp dir.
require('node:module').enableCompileCache?.(
  join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'sandbox-desk', 'node-compile-cache'),
);

const cli = join(__dirname, '..', 'dist', 'src', 'cli');

async function run(argv) {
  const entry = join(cli, 'main.js');
  if (!existsSync(entry)) {
    process.stderr.write('sandbox-desk: the CLI is not built yet — run `npm run build` (or `npm run setup`) in the checkout\n');
    return 125;
  }
  // `exec NAME [plain flags] -- …` skips the full parser's module graph (src/cli/fast-exec.ts); any other
  // shape — or a log that must be written — gives null and goes through the full CLI below. The fast path
  // is one bundled CommonJS file (scripts/bundle-cli.mjs, part of `npm run build`), required: no ES
  // module loader at all on this path. After a bare `tsc -b` without it, the same code from tsc's files.
  let code = null;
  if (argv[0] === 'exec') {
    const bundle = join(cli, 'fast-exec.bundle.cjs');
    const { fastExec } = existsSync(bundle) ? require(bundle) : await import(pathToFileURL(join(cli, 'fast-exec.js')).href);
    code = await fastExec(argv);
  }
  if (code === null) {
    const { main } = await import(pathToFileURL(entry).href);
    code = await main(argv);
  }
  return code;
}

run(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err) => {
    // What an uncaught error in the ES module launcher did: the stack on stderr, exit 1.
    process.stderr.write(`${err && err.stack ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  },
);
