import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';

/** Where a plugin was found: shipped with the app, the data directory's plugins folder, the config file, or `--plugin`. */
export type PluginSource = 'builtin' | 'data-dir' | 'config' | 'cli';

/** The plugins that ship with the app, as folders under the package's `plugins/` (the template is not one). */
export const BUILTIN_PLUGINS = ['ssh', 'podman'] as const;

/**
 * The in-tree plugins, found in the package's own folder (a checkout or an installed app), loaded
 * like any other plugin. Not built yet (no dist/): listed with the error that says so.
 */
export function discoverBuiltinPlugins(packageRoot: string): PluginCandidate[] {
  return BUILTIN_PLUGINS.map((name) => readPluginPath(join(packageRoot, 'plugins', name), 'builtin'));
}

/** A plugin located on disk, before its code is loaded. `error` set: it cannot be loaded, and says why. */
export interface PluginCandidate {
  name: string;
  version: string | null;
  dir: string;
  /** The module to import: the manifest's `sandboxDesk.provider`, resolved inside `dir`. */
  entry: string | null;
  source: PluginSource;
  error: string | null;
}

const MANIFEST_FIELD = 'sandboxDesk';

/**
 * Reads one plugin path: a folder with a package.json carrying `"sandboxDesk": {"provider": "./dist/index.js"}`,
 * or a single `.js`/`.mjs` module. Never throws: a broken manifest becomes a candidate with an error,
 * so `plugin list` can show it.
 */
export function readPluginPath(path: string, source: PluginSource): PluginCandidate {
  const abs = resolve(path);
  const fallback = { name: basename(abs).replace(/\.m?js$/, ''), version: null, dir: abs, entry: null, source };
  let st;
  try {
    st = statSync(abs);
  } catch {
    return { ...fallback, error: `${abs} does not exist` };
  }
  if (st.isFile()) {
    if (!/\.m?js$/.test(abs)) return { ...fallback, error: `${abs} is not a .js/.mjs module or a folder with a package.json` };
    return { ...fallback, dir: dirname(abs), entry: abs, error: null };
  }
  const manifestPath = join(abs, 'package.json');
  if (!existsSync(manifestPath)) return { ...fallback, error: `${abs} has no package.json` };
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  } catch (err) {
    return { ...fallback, error: `${manifestPath} is not valid JSON: ${(err as Error).message}` };
  }
  const m = (manifest ?? {}) as { name?: unknown; version?: unknown; [MANIFEST_FIELD]?: { provider?: unknown } };
  const name = typeof m.name === 'string' && m.name ? m.name : fallback.name;
  const version = typeof m.version === 'string' ? m.version : null;
  const provider = m[MANIFEST_FIELD]?.provider;
  if (typeof provider !== 'string' || !provider) {
    return { ...fallback, name, version, error: `${manifestPath} has no "${MANIFEST_FIELD}": {"provider": "./path/to/module.js"} field` };
  }
  const entry = resolve(abs, provider);
  const rel = relative(abs, entry);
  // The manifest may only point inside its own package: a plugin is what its folder holds.
  if (rel.startsWith('..') || isAbsolute(rel))
    return { ...fallback, name, version, error: `${MANIFEST_FIELD}.provider ${JSON.stringify(provider)} points outside the plugin folder` };
  if (!existsSync(entry)) {
    return {
      ...fallback,
      name,
      version,
      error: `${MANIFEST_FIELD}.provider ${JSON.stringify(provider)} does not exist (${entry}); is the plugin built?`,
    };
  }
  return { name, version, dir: abs, entry, source, error: null };
}

/** True when a package.json declares the manifest field: used to pick plugins out of node_modules. */
function declaresPlugin(dir: string): boolean {
  try {
    const m = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
    return typeof m[MANIFEST_FIELD] === 'object' && m[MANIFEST_FIELD] !== null;
  } catch {
    return false;
  }
}

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() || d.isSymbolicLink())
      .map((d) => join(dir, d.name))
      .sort();
  } catch {
    return [];
  }
}

/**
 * The plugins installed under `<data dir>/plugins/`: each folder there, and npm packages installed
 * into it (`npm install --prefix <data dir>/plugins PKG`) that carry the manifest field.
 */
export function discoverInstalledPlugins(pluginsDir: string): PluginCandidate[] {
  const found: PluginCandidate[] = [];
  for (const dir of subdirs(pluginsDir)) {
    const name = basename(dir);
    if (name === 'node_modules' || name.startsWith('.')) continue;
    found.push(readPluginPath(dir, 'data-dir'));
  }
  for (const dir of subdirs(join(pluginsDir, 'node_modules'))) {
    const pkgs = basename(dir).startsWith('@') ? subdirs(dir) : [dir];
    for (const pkg of pkgs) if (declaresPlugin(pkg)) found.push(readPluginPath(pkg, 'data-dir'));
  }
  return found;
}
