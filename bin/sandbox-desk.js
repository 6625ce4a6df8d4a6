#!/usr/bin/env node
// The `sandbox-desk` command. The CLI is compiled TypeScript (dist/); `npm run setup` builds it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('sandbox-desk: the CLI is not built yet — run `npm run build` (or `npm run setup`) in the checkout\n');
  process.exit(125);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
