/**
 * The plugin API, version 1: what a plugin package may import (types only) and what it is handed.
 *
 * A plugin is an ES module named by its package.json (`"sandboxDesk": {"provider": "./dist/index.js"}`).
 * It exports `register(ctx)` (or a default export `{ apiVersion, register }`) and calls
 * `ctx.registerProvider(provider)` once per backend it adds. Providers implement the contract in
 * `provider.ts`; everything that crosses from a plugin into the app is validated, so a broken plugin
 * is reported, never trusted.
 *
 * Plugins import this file with `import type` only: at runtime everything they need (errors, the home
 * probe, a logger) comes through `ctx`, so the same compiled plugin runs in-process or in an isolated
 * plugin host (`plugins.isolation: host`) without reaching into the app's files.
 * See docs/plugins.md.
 */
import type { ErrorCode } from '../shared/errors.js';
import type { SandboxProvider } from './provider.js';

export type {
  BackendState,
  BackendStatus,
  CheckpointArtifact,
  CheckpointCapability,
  CheckpointSpec,
  CreateEnvironmentOptions,
  ExecPrefixOptions,
  LifecycleContext,
  Mount,
  ProgressEvent,
  ProvisionResult,
  ProvisionSpec,
  SandboxEnvironment,
  SandboxProvider,
  SandboxRef,
} from './provider.js';
export type { ErrorCode } from '../shared/errors.js';

/** Bumped only for incompatible changes; a plugin declaring another major version is not loaded. */
export const PLUGIN_API_VERSION = 1;

export interface PluginLogger {
  info(message: string): void;
  warn(message: string): void;
  /** Routine detail (e.g. "plugin x: loaded"), kept out of the app's log at its default level. */
  debug?(message: string): void;
}

/** Result of a short local argv run by `ctx.helpers.runArgv` (no shell). */
export interface PluginArgvResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface PluginContext {
  /** The API version the app speaks (currently 1). */
  readonly apiVersion: number;
  /** The plugin's own directory for state (known_hosts, control sockets…): `<data dir>/plugins-data/<plugin>`. Created 0700. */
  readonly dataDir: string;
  /** `in-process` or `host`: where this plugin's code runs. Informational; the contract is the same. */
  readonly isolation: 'in-process' | 'host';
  readonly logger: PluginLogger;
  /** Adds a backend. Names are `[a-z0-9][a-z0-9_-]{0,31}`; built-in names (local, docker, qemu) are refused. */
  registerProvider(provider: SandboxProvider): void;
  /** An error the app shows as is: a stable code, what was wrong, and what to do. */
  error(code: ErrorCode, message: string, opts?: { hint?: string }): Error;
  readonly helpers: {
    /** Measures the sandbox user's real home through an exec prefix (`cd ~ && pwd -P`). */
    measureHome(prefix: string[], joinsArgv?: boolean): Promise<string>;
    /** Runs a short local argv without a shell and collects its output. */
    runArgv(argv: string[], opts?: { timeoutMs?: number; input?: string }): Promise<PluginArgvResult>;
  };
}

/** The shape of a plugin module's exports. */
export interface SandboxDeskPlugin {
  /** The major API version the plugin was written for; omitted means 1. */
  apiVersion?: number;
  register(ctx: PluginContext): void | Promise<void>;
}
