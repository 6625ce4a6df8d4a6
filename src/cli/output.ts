import type { ExecWarning, SandboxInfo, SessionInfo } from '../api/contract.js';
import { asSandboxDeskError } from '../shared/errors.js';
import { ISOLATION_LABEL } from '../shared/isolation.js';
import { displayKey } from './display-key.js';

/** Exit code for Sandbox Desk's own failures (docker exec uses the same), never a command's. */
export const EXIT_OWN_ERROR = 125;

export interface Out {
  stdout: (s: string | Buffer) => void;
  stderr: (s: string | Buffer) => void;
}

export const processOut: Out = {
  stdout: (s) => void process.stdout.write(s),
  stderr: (s) => void process.stderr.write(s),
};

export function printJson(out: Out, value: unknown): void {
  out.stdout(JSON.stringify(value, null, 2) + '\n');
}

/** One line on stderr, or `{"error":{…}}` on stdout with --json; always exit 125. */
export function printError(out: Out, err: unknown, json: boolean): number {
  const e = asSandboxDeskError(err);
  if (json) printJson(out, { error: e.toJSON() });
  else out.stderr(`sandbox-desk: ${e.oneLine()}\n`);
  return EXIT_OWN_ERROR;
}

export function printWarnings(out: Out, warnings: ExecWarning[]): void {
  for (const w of warnings) out.stderr(`sandbox-desk: warning: ${w.message}\n`);
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

export function sandboxTable(list: SandboxInfo[]): string {
  if (list.length === 0) return 'No sandboxes yet. Create one: sandbox-desk sandbox create NAME --backend docker\n';
  return table([
    ['NAME', 'BACKEND', 'STATE', 'IMAGE', 'USER', 'NETWORK', 'DEFAULT CWD'],
    ...list.map((s) => [s.name, s.backend, s.state, s.image ?? '-', s.user ?? '-', s.network?.mode ?? 'open', s.declaredDefaultCwd]),
  ]);
}

export function sandboxDetails(s: SandboxInfo): string {
  const rows: [string, string][] = [
    ['name', s.name],
    ['backend', `${s.backend} (${ISOLATION_LABEL[s.isolation]})`],
    ['state', s.state + (s.stateDetail ? ` — ${s.stateDetail}` : '')],
    ['image', s.image ?? '-'],
    ['user', s.user ?? '(backend default)'],
    ['declared default cwd', s.declaredDefaultCwd],
    ['default cwd', s.defaultCwd ?? '(resolved after connect)'],
    ['default cwd as given', s.defaultCwdStatus.text],
    ['home', s.home ?? '(resolved after connect)'],
    ['temp dir', s.tempDir ?? '-'],
    ['last observed cwd', s.lastObservedCwd ?? '-'],
    ['streams', s.supportsStreams ? 'yes' : 'no'],
    [
      'network',
      s.network ? (s.network.mode === 'allow' ? `allow ${s.network.allow.join(', ') || '(nothing yet)'}` : s.network.mode) : 'open',
    ],
    ...Object.entries(s.details ?? {}).map(([k, v]): [string, string] => [k, v === null ? '-' : String(v)]),
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n') + '\n';
}

export function sessionTable(list: SessionInfo[]): string {
  if (list.length === 0) return 'No sessions yet: the first `sandbox-desk exec` creates one.\n';
  // After a restore or fork, which checkpoint each record came from (the column only then).
  const restored = list.some((s) => s.restoredFrom);
  return table([
    ['KEY', 'PARENT', 'CWD', 'SOURCE', 'OBSERVED AT', ...(restored ? ['RESTORED FROM'] : [])],
    ...list.map((s) => [
      displayKey(s.key),
      s.parent === null ? '-' : displayKey(s.parent),
      s.cwd ?? '-',
      s.source ?? '-',
      s.observedAt ?? '-',
      ...(restored ? [s.restoredFrom ?? '-'] : []),
    ]),
  ]);
}
