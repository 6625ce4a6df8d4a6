import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The socket protocol's version: a client speaks to a service of the same protocol only. */
export const SERVICE_PROTOCOL = 1;

/**
 * The header a client puts on each request to say which service it expects: `<version>/<protocol>`.
 * The service answers a request whose header names another with `version_mismatch` (HTTP 409) before
 * it does anything, its own ServiceInfo in the error's details — so a CLI call needs no separate
 * `/service/info` round-trip first (issue 34: one request per `exec`).
 */
export const CLIENT_VERSION_HEADER = 'x-sandbox-desk-client';

export function clientVersionTag(version: string, protocol = SERVICE_PROTOCOL): string {
  return `${version}/${protocol}`;
}

/** Where `sandbox-desk mcp` upgrades its connection to relay its stdio (src/service/mcp-relay.ts). */
export const MCP_RELAY_PATH = '/service/mcp';
export const MCP_RELAY_PROTOCOL = 'sandbox-desk-mcp';

/** Where `sandbox-desk serve` holds its connection while the service serves the browser mode for it. */
export const SERVE_RELAY_PATH = '/service/serve';
export const SERVE_RELAY_PROTOCOL = 'sandbox-desk-serve';

/** The first line the service sends on a serve connection: the browser mode's address and its tokens. */
export interface ServeGrant {
  /** The app's URL with the UI token. */
  url: string;
  origin: string;
  token: string;
  /** With --mcp: the agent token valid while this listener lives. */
  agentToken: string | null;
}

/** What `GET /service/info` answers on the service's socket. */
export interface ServiceInfo {
  version: string;
  pid: number;
  protocol: number;
  dataDir: string;
  startedAt: string;
  busy: ServiceBusy;
}

/** What keeps the service from exiting when idle, and from being restarted for another version. */
export interface ServiceBusy {
  runningSandboxes: number;
  clients: number;
  recordings: number;
}

/** The package's root (nearest package.json above this file): from src/ under vitest and dist/src/ compiled. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the Sandbox Desk package root');
    dir = up;
  }
  return dir;
}

/**
 * package.json's version, inlined by esbuild (`define`) in the CLI's fast-path bundle
 * (scripts/bundle-cli.mjs): a `sandbox-desk exec` then reads no package.json. Undeclared — `typeof`
 * gives 'undefined' — everywhere else (tsc's output, vitest), which read the file.
 */
declare const SANDBOX_DESK_BUNDLED_VERSION: string | undefined;

/**
 * This code's version, as a service reports it and a client compares it. SANDBOX_DESK_TEST_VERSION
 * replaces it — for tests only (test/integration/service.test.ts fakes a service of another version).
 */
export function ownVersion(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SANDBOX_DESK_TEST_VERSION) return env.SANDBOX_DESK_TEST_VERSION;
  if (typeof SANDBOX_DESK_BUNDLED_VERSION === 'string') return SANDBOX_DESK_BUNDLED_VERSION;
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
