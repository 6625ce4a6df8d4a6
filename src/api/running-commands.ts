import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReplayEvent } from '../shared/replay-types.js';

/**
 * The commands running now, one small file each under `<recordings>/<sandbox>/running/`, so that a
 * process killed with `kill -9` mid-command (the service) leaves a trace the next one can report: a
 * command's replay event is written when it ends, and a killed process ends nothing. The next
 * process turns each file whose owner is dead into an interrupted `command` event — no exit code, its
 * cwd not observed — and the session's cwd record is left as it was (the last observed cwd; nothing
 * else writes it for a command that never reported). Best effort: a full disk costs the trace, never
 * the command.
 */
export interface RunningCommand {
  sandbox: string;
  session: string;
  command: string;
  startedAt: string;
  /** The process running it: its file outlives it only when it died. */
  pid: number;
}

const DIR = 'running';

export class RunningCommands {
  constructor(
    private readonly root: string,
    private readonly pidAlive: (pid: number) => boolean = alive,
  ) {}

  private dir(sandbox: string): string {
    return join(this.root, sandbox, DIR);
  }

  /** Notes a command as running; the returned function forgets it (call it however the command ends). */
  begin(c: Omit<RunningCommand, 'pid'>): () => void {
    const file = join(this.dir(c.sandbox), `${randomBytes(8).toString('hex')}.json`);
    try {
      mkdirSync(this.dir(c.sandbox), { recursive: true });
      writeFileSync(file, JSON.stringify({ ...c, pid: process.pid } satisfies RunningCommand));
    } catch {
      return () => undefined;
    }
    return () => rmSync(file, { force: true });
  }

  /**
   * The commands whose process died while they ran, as replay events (oldest first); their files are
   * removed. A file of a live process (this one, or another core on the data dir) is left alone.
   */
  sweep(): Array<{ sandbox: string; event: ReplayEvent }> {
    const out: Array<{ sandbox: string; event: ReplayEvent }> = [];
    let sandboxes: string[];
    try {
      sandboxes = readdirSync(this.root);
    } catch {
      return out;
    }
    for (const sandbox of sandboxes) {
      let names: string[];
      try {
        names = readdirSync(this.dir(sandbox));
      } catch {
        continue;
      }
      for (const name of names) {
        const file = join(this.dir(sandbox), name);
        const c = readRunning(file);
        if (c && this.pidAlive(c.pid)) continue;
        rmSync(file, { force: true });
        // A file cut by the crash (or not ours) says nothing reliable: it is dropped.
        if (c && c.sandbox === sandbox) out.push({ sandbox, event: interruptedEvent(c) });
      }
    }
    return out.sort((a, b) => a.event.at.localeCompare(b.event.at));
  }
}

/** A command its process never finished, as the replay shows it. */
export function interruptedEvent(c: RunningCommand): ReplayEvent {
  const summary = c.command.length > 200 ? `${c.command.slice(0, 199)}…` : c.command;
  return {
    at: c.startedAt,
    kind: 'command',
    summary,
    session: c.session,
    cwdObserved: null,
    exitCode: null,
    interrupted: true,
    warnings: [
      `cwd_unobserved: the command was interrupted: the process running it (pid ${c.pid}) ended before it finished; its cwd was not observed and session ${c.session} keeps its last observed cwd`,
    ],
    error: `interrupted: the process running it (pid ${c.pid}) ended before the command finished`,
  };
}

function readRunning(file: string): RunningCommand | null {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as Partial<RunningCommand>;
    if (
      typeof v.sandbox === 'string' &&
      typeof v.session === 'string' &&
      typeof v.command === 'string' &&
      typeof v.startedAt === 'string' &&
      typeof v.pid === 'number' &&
      Number.isInteger(v.pid) &&
      v.pid > 0
    )
      return v as RunningCommand;
  } catch {
    /* cut by the crash */
  }
  return null;
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
