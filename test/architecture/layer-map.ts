import type { Exception, LayerSpec } from './layer-check.js';

/**
 * The layer map (docs/architecture.md draws it): each folder and the folders it may import. Dependencies
 * point down only; `exec` and `cwd` are siblings that never import each other; nothing imports upward.
 */
const below = {
  shared: [] as string[],
  platform: ['shared'],
  sandbox: ['platform', 'shared'],
};
export const LAYERS: Record<string, LayerSpec> = {
  shared: { dir: 'src/shared', may: below.shared },
  platform: { dir: 'src/platform', may: below.platform },
  sandbox: { dir: 'src/sandbox', may: below.sandbox },
  cwd: { dir: 'src/cwd', may: ['sandbox', ...below.sandbox] },
  exec: { dir: 'src/exec', may: ['sandbox', ...below.sandbox] },
  store: { dir: 'src/store', may: ['sandbox', ...below.sandbox] },
  desktop: { dir: 'src/desktop', may: ['cwd', 'exec', 'store', 'sandbox', ...below.sandbox] },
  session: { dir: 'src/session', may: ['desktop', 'cwd', 'exec', 'store', 'sandbox', ...below.sandbox] },
  // Warm pools (issue 37): made ahead with the session's environments and the desktop; claimed by api.
  pool: { dir: 'src/pool', may: ['session', 'desktop', 'cwd', 'exec', 'store', 'sandbox', ...below.sandbox] },
  api: { dir: 'src/api', may: ['pool', 'session', 'desktop', 'cwd', 'exec', 'store', 'sandbox', ...below.sandbox] },
  mcp: { dir: 'src/mcp', may: ['api', 'pool', 'session', 'desktop', 'cwd', 'exec', 'store', 'sandbox', ...below.sandbox] },
  // The typed client (the SDK): the contract over HTTP. A client never loads the core.
  client: { dir: 'src/client', may: ['shared', 'src/api/contract.ts'] },
  // The per-user service: one core, every client's requests (src/service/).
  service: { dir: 'src/service', may: ['mcp', 'api', 'pool', 'session', 'desktop', 'cwd', 'exec', 'store', 'sandbox', ...below.sandbox] },
  // The CLI is where the program is put together: `service run` loads the service (lazily); every
  // other command is a client.
  cli: {
    dir: 'src/cli',
    may: ['service', 'client', 'mcp', 'api', 'pool', 'session', 'desktop', 'cwd', 'exec', 'store', 'sandbox', ...below.sandbox],
  },
  main: { dir: 'main', may: ['client', 'api', 'pool', 'session', 'desktop', 'cwd', 'exec', 'store', 'sandbox', ...below.sandbox] },
  // The UI talks to the core only through the contract (types and zod schemas) and the wire types.
  renderer: { dir: 'renderer', may: ['shared', 'src/api/contract.ts'] },
  // A plugin is loaded like a third-party one: it sees only the versioned plugin API, as types.
  plugins: { dir: 'plugins/*', may: ['src/sandbox/plugin-api.ts', 'shared'], typesOnly: true },
};

/** Edges the map allows although the layers forbid them, each with its reason. None today. */
export const EXCEPTIONS: Exception[] = [];

/** Unit tests beside the code may use the shared test helpers (test/expect-error.ts, test/seeded-random.ts). */
export const TESTS_MAY = ['test'];
