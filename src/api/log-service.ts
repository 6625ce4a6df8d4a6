import { existsSync } from 'node:fs';
import { followFile, readTail } from '../platform/file-tail.js';
import { desktopLogSources, DESKTOP_LOGS, followDesktopLog, readDesktopLog, type DesktopLogLocation } from '../desktop/desktop-logs.js';
import { SandboxDeskError } from '../shared/errors.js';
import type { IDisposable } from '../shared/lifecycle.js';
import type { LogSourceInfo, LogText } from '../shared/observability-types.js';
import type { LogFollower } from '../sandbox/observability.js';
import type { SandboxProvider, SandboxRef } from '../sandbox/provider.js';

export const APP_LOG_SOURCE = 'app';
import { DEFAULT_LOG_TAIL } from '../shared/observability-types.js';
export const DEFAULT_TAIL = DEFAULT_LOG_TAIL;

export interface LogServiceHost {
  /** The sandbox's ref and provider; throws not_found for an unknown sandbox. */
  target(sandbox: string): Promise<{ ref: SandboxRef; provider: SandboxProvider }>;
  desktopLogs(sandbox: string): Promise<DesktopLogLocation>;
  /** The app's own log file (src/platform/log.ts); every process of this home writes to it. */
  appLogFile: string;
}

/**
 * Every log of a sandbox behind one name each: the backend's (a container's output, a VM's serial
 * console and virtiofsd logs), the desktop's inside the sandbox (launcher, Xvnc, Xfce, Chromium) and
 * the app's own. Each says whether it exists; asking for one that does not is an error naming those
 * that do, so a typo or a stale `--source` never shows an empty log as if it were one.
 */
export class LogService {
  constructor(private readonly host: LogServiceHost) {}

  async sources(sandbox: string): Promise<LogSourceInfo[]> {
    const { ref, provider } = await this.host.target(sandbox);
    const out: LogSourceInfo[] = [];
    if (provider.logs) {
      try {
        for (const s of await provider.logs.sources(ref)) out.push({ ...s, kind: 'backend' });
      } catch (err) {
        out.push({ id: 'backend', label: `${provider.name} logs`, kind: 'backend', exists: false, detail: messageOf(err) });
      }
    }
    if (provider.supportsStreams) out.push(...(await this.desktopSources(sandbox, ref, provider)));
    const app = this.host.appLogFile;
    out.push({
      id: APP_LOG_SOURCE,
      label: 'Sandbox Desk (this app)',
      kind: 'app',
      exists: existsSync(app),
      detail: existsSync(app) ? app : `${app} is not there yet (nothing logged)`,
    });
    return out;
  }

  private async desktopSources(sandbox: string, ref: SandboxRef, provider: SandboxProvider): Promise<LogSourceInfo[]> {
    const absent = (detail: string): LogSourceInfo[] =>
      DESKTOP_LOGS.map((l) => ({ id: l.id, label: l.label, kind: 'desktop' as const, exists: false, detail }));
    const status = await provider.status(ref).catch(() => null);
    if (status?.state !== 'running') return absent('the sandbox is not running');
    try {
      const at = await this.host.desktopLogs(sandbox);
      return (await desktopLogSources(at)).map((s) => ({ ...s, kind: 'desktop' as const }));
    } catch (err) {
      return absent(`cannot look inside the sandbox: ${messageOf(err)}`);
    }
  }

  /** The source asked for (or the first that exists), checked to exist: else an error listing those that do. */
  async resolve(sandbox: string, source: string | undefined): Promise<LogSourceInfo> {
    const all = await this.sources(sandbox);
    const existing = all.filter((s) => s.exists);
    const list = existing.length ? existing.map((s) => s.id).join(', ') : 'none';
    if (source === undefined) {
      const first = existing.find((s) => s.kind === 'backend') ?? existing[0];
      if (first) return first;
      throw new SandboxDeskError('not_found', `sandbox ${sandbox} has no logs yet`, {
        hint: all.map((s) => `${s.id}: ${s.detail}`).join('; '),
      });
    }
    const found = all.find((s) => s.id === source);
    if (!found) {
      throw new SandboxDeskError('not_found', `sandbox ${sandbox} has no log source ${JSON.stringify(source)}`, {
        hint: `sources that exist: ${list} (see \`sandbox-desk logs ${sandbox} --list\`)`,
        details: { sources: existing.map((s) => s.id) },
      });
    }
    if (!found.exists) {
      throw new SandboxDeskError('not_found', `log source ${source} of sandbox ${sandbox} does not exist: ${found.detail ?? 'not there'}`, {
        hint: `sources that exist: ${list}`,
        details: { sources: existing.map((s) => s.id) },
      });
    }
    return found;
  }

  async read(sandbox: string, source: string | undefined, tail = DEFAULT_TAIL): Promise<LogText> {
    const src = await this.resolve(sandbox, source);
    let text: string;
    if (src.kind === 'app') text = readTail(this.host.appLogFile, tail);
    else if (src.kind === 'desktop') text = await readDesktopLog(await this.host.desktopLogs(sandbox), src.id, tail);
    else {
      const { ref, provider } = await this.host.target(sandbox);
      text = await provider.logs!.read(ref, src.id, tail);
    }
    return { sandbox, source: src.id, text, tail };
  }

  /** The last `tail` lines, then every new one until disposed; `to.onEnd` when the source ends. */
  async follow(sandbox: string, source: string | undefined, tail: number, to: LogFollower): Promise<IDisposable & { source: string }> {
    const src = await this.resolve(sandbox, source);
    let sub: IDisposable;
    if (src.kind === 'app') sub = followFile(this.host.appLogFile, { tail }, to.onData);
    else if (src.kind === 'desktop') sub = followDesktopLog(await this.host.desktopLogs(sandbox), src.id, tail, to);
    else {
      const { ref, provider } = await this.host.target(sandbox);
      sub = await provider.logs!.follow(ref, src.id, tail, to);
    }
    return { source: src.id, dispose: () => sub.dispose() };
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
