import type { Db } from './database.js';
import type { Lease } from '../shared/lease-types.js';
import { Emitter, type Event } from '../shared/lifecycle.js';

export type { Lease } from '../shared/lease-types.js';

/** A desktop's screen size in pixels. */
export interface ScreenSize {
  width: number;
  height: number;
}

/** A give-back: the lease in force afterwards, and the agent's screen size to put back (only when this call handed control back). */
export interface HandBack {
  lease: Lease;
  restore: ScreenSize | null;
}

const STORED_SIZE = /^(\d{1,5})x(\d{1,5})$/;

/** The lease changed hands: the lease in force now and the one it replaced. */
export interface LeaseChange {
  sandbox: string;
  lease: Lease;
  previous: Lease;
}

interface Row {
  holder: string;
  viewer_id: string | null;
  epoch: number;
  since: string;
  reason: string | null;
}

/**
 * The control lease of each sandbox's desktop, persisted so the app, the CLI and agents in other
 * processes agree. A lease that cannot be read counts as a human holding it: fail closed, never let the
 * agent act on a seat someone may be sitting at.
 */
export class LeaseStore {
  private readonly changed = new Emitter<LeaseChange>();
  /**
   * Fires in the process that wrote, once per change of hands — not for a re-acquire by the holder
   * or a give-back by someone who does not hold it (those write nothing). The replay journals from
   * here, so a change is on the timeline whichever process made it, and only once.
   */
  readonly onChanged: Event<LeaseChange> = this.changed.event;

  constructor(private readonly db: Db) {}

  get(sandbox: string): Lease {
    let row: Row | undefined;
    try {
      row = this.db.prepare(`SELECT holder, viewer_id, epoch, since, reason FROM leases WHERE sandbox = ?`).get(sandbox) as Row | undefined;
    } catch (err) {
      return {
        holder: 'human',
        viewerId: null,
        epoch: -1,
        since: new Date().toISOString(),
        reason: `lease unreadable (${(err as Error).message}): failing closed`,
      };
    }
    if (!row) return { holder: 'agent', viewerId: null, epoch: 0, since: new Date(0).toISOString(), reason: null };
    if (row.holder !== 'agent' && row.holder !== 'human') {
      return {
        holder: 'human',
        viewerId: null,
        epoch: row.epoch,
        since: row.since,
        reason: `lease unreadable (holder ${JSON.stringify(row.holder)}): failing closed`,
      };
    }
    return { holder: row.holder, viewerId: row.viewer_id, epoch: row.epoch, since: row.since, reason: row.reason };
  }

  /**
   * A human viewer takes control; the last one to ask wins. Re-acquiring by the holder changes nothing.
   * `agentScreen`: the desktop's size as the agent had it, kept until control goes back to the agent
   * (only when the agent held it: a person taking over from another person keeps what the first one
   * found, not the size that person gave the screen).
   */
  acquire(sandbox: string, viewerId: string, reason = 'taken by a viewer', agentScreen: ScreenSize | null = null): Lease {
    const cur = this.get(sandbox);
    if (cur.holder === 'human' && cur.viewerId === viewerId) return cur;
    const keep = cur.holder === 'agent' ? agentScreen : this.agentScreen(sandbox);
    return this.write(sandbox, cur, 'human', viewerId, reason, keep);
  }

  /** Gives control back to the agent; only the holder may. Returns the lease in force afterwards. */
  release(sandbox: string, viewerId: string, reason = 'given back'): Lease {
    return this.handBack(sandbox, viewerId, reason).lease;
  }

  /**
   * `release`, also telling the agent's screen size remembered when the person took control — non-null
   * only when this call handed control back and a size was remembered; the memory ends with the lease.
   */
  handBack(sandbox: string, viewerId: string, reason = 'given back'): HandBack {
    const cur = this.get(sandbox);
    if (cur.holder !== 'human' || cur.viewerId !== viewerId) return { lease: cur, restore: null };
    const restore = this.agentScreen(sandbox);
    return { lease: this.write(sandbox, cur, 'agent', null, reason, null), restore };
  }

  /** The agent's screen size remembered while a person holds control; null when none (or unreadable). */
  agentScreen(sandbox: string): ScreenSize | null {
    let row: { agent_geometry: string | null } | undefined;
    try {
      row = this.db.prepare(`SELECT agent_geometry FROM leases WHERE sandbox = ?`).get(sandbox) as typeof row;
    } catch {
      return null;
    }
    const m = STORED_SIZE.exec(row?.agent_geometry ?? '');
    return m ? { width: Number(m[1]), height: Number(m[2]) } : null;
  }

  private write(
    sandbox: string,
    previous: Lease,
    holder: Lease['holder'],
    viewerId: string | null,
    reason: string,
    agentScreen: ScreenSize | null,
  ): Lease {
    const since = new Date().toISOString();
    const epoch = previous.epoch + 1;
    const geometry = agentScreen ? `${agentScreen.width}x${agentScreen.height}` : null;
    this.db
      .prepare(
        `INSERT INTO leases (sandbox, holder, viewer_id, epoch, since, reason, agent_geometry) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(sandbox) DO UPDATE SET holder = excluded.holder, viewer_id = excluded.viewer_id, epoch = excluded.epoch, since = excluded.since, reason = excluded.reason, agent_geometry = excluded.agent_geometry`,
      )
      .run(sandbox, holder, viewerId, Math.max(epoch, 1), since, reason, geometry);
    const lease: Lease = { holder, viewerId, epoch: Math.max(epoch, 1), since, reason };
    this.changed.fire({ sandbox, lease, previous });
    return lease;
  }

  /**
   * SQLite's data_version of this connection: it moves when another connection (another process: the
   * window, a CLI) wrote the database. Lets a waiter in this process see another's give-back cheaply.
   */
  dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
