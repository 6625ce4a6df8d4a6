import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ReplayEvent } from '../shared/replay-types.js';

/**
 * `<recordings>/<sandbox>/events.jsonl`: the replay events no store keeps — a command's text with
 * its cwd (the call log keeps the agent's call, not what the shell ran, and the CLI's `exec` leaves
 * no call at all), a desktop action's point and frame (the desktop keeps only the last one), a lease
 * change (the lease table keeps only the current holder), a recording's warnings. Agent calls and
 * checkpoints are read from their stores at replay time instead. One JSON object per line, appended
 * whole, so a crash costs at most the line being written; a full disk drops the event, never the
 * operation that made it.
 */
export class ReplayJournal {
  constructor(
    private readonly root: string,
    private readonly enabled: () => boolean = () => true,
  ) {}

  file(sandbox: string): string {
    return join(this.root, sandbox, 'events.jsonl');
  }

  append(sandbox: string, event: ReplayEvent): void {
    if (!this.enabled()) return;
    try {
      mkdirSync(join(this.root, sandbox), { recursive: true });
      appendFileSync(this.file(sandbox), `${JSON.stringify(event)}\n`);
    } catch {
      // Disk full or the folder removed: the event is lost, the command/action it describes is not.
    }
  }

  /** Every whole line, oldest first (as appended). */
  read(sandbox: string): ReplayEvent[] {
    let text: string;
    try {
      text = readFileSync(this.file(sandbox), 'utf8');
    } catch {
      return [];
    }
    const out: ReplayEvent[] = [];
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as ReplayEvent);
      } catch {
        /* a line cut by a crash */
      }
    }
    return out;
  }
}
