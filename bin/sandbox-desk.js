#!/usr/bin/env node
// The `sandbox-desk` command. The CLI is compiled TypeScript (dist/); `npm run setup` builds it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('sandbox-desk: the CLI is not built yet — run `npm run build` (or `npm run setup`) in the checkout\n');
  process.exit(125);
}
const argv = process.argv.slice(2);
// `exec NAME [plain flags] -- …` skips the full parser's module graph (src/cli/fast-exec.ts); any other
// shape — or a log that must be written — gives null and goes through the full CLI below.
let code = null;
if (argv[0] === 'exec') {
  const { fastExec } = await import(new URL('../dist/src/cli/fast-exec.js', import.meta.url).href);
  code = await fastExec(argv);
}
if (code === null) {
  const { main } = await import(entry.href);
  code = await main(argv);
}
process.exitCode = code;
