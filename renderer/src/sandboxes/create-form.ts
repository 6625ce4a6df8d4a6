import { allowEntryProblem } from '../../../src/shared/network-policy.js';
/**
 * The create dialog's Advanced fields, parsed as the CLI parses --mount and --env, so a mistake is
 * shown under the field before anything is sent.
 */
import type { ImageInfo } from '../../../src/api/contract.js';

export interface MountLine {
  hostPath: string;
  sandboxPath: string;
  readOnly?: boolean;
}

/** One `HOST:SANDBOX[:ro]` per line; blank lines are skipped. */
export function parseMountLines(text: string): { mounts: MountLine[]; error: string | null } {
  const mounts: MountLine[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const parts = line.split(':');
    const ro = parts.length === 3 && parts[2] === 'ro';
    if (!(parts.length === 2 || ro) || !parts[0]!.startsWith('/') || !parts[1]!.startsWith('/'))
      return { mounts, error: `line ${i + 1}: "${line}" is not HOST:SANDBOX or HOST:SANDBOX:ro with absolute paths` };
    mounts.push({ hostPath: parts[0]!, sandboxPath: parts[1]!, ...(ro ? { readOnly: true } : {}) });
  }
  return { mounts, error: null };
}

/** One `KEY=VALUE` per line; the value may contain `=`. */
export function parseEnvLines(text: string): { env: Record<string, string>; error: string | null } {
  const env: Record<string, string> = {};
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    const key = eq > 0 ? line.slice(0, eq) : '';
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return { env, error: `line ${i + 1}: "${line}" is not KEY=VALUE (KEY: letters, digits, _)` };
    env[key] = line.slice(eq + 1);
  }
  return { env, error: null };
}

/** The images a backend can start from: Docker images for docker, VM images for qemu, none otherwise. */
export function imagesFor(backend: string, images: ImageInfo[]): ImageInfo[] {
  const kind = backend === 'docker' ? 'docker' : backend === 'qemu' ? 'vm' : null;
  return kind ? images.filter((i) => i.kind === kind) : [];
}

/** 1536 → "1.5 KiB". */
export function humanSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
}

/** The create dialog's allow entries, one per line (blank lines skipped); the first bad one is named. */
export function parseAllowLines(text: string): { entries: string[]; error: string | null } {
  const entries = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  for (const e of entries) {
    const problem = allowEntryProblem(e);
    if (problem) return { entries, error: problem };
  }
  return { entries, error: null };
}
