import { NetworkPolicyStore } from './network-policy-store.js';
import { openDatabase, instanceId, type Db } from './database.js';
import { AgentTokenStore } from './agent-token-store.js';
import { CallLogStore } from './call-log-store.js';
import { CheckpointStore } from './checkpoint-store.js';
import { LeaseStore } from './lease-store.js';
import { SandboxStore } from './sandbox-store.js';
import { SessionStore } from './session-store.js';
import { OperationStore } from './operation-store.js';
import { EventJournal } from './event-journal.js';
import { StoreChanges } from './store-changes.js';
import { PoolStore } from './pool-store.js';

/** The app's persisted state: one SQLite database in the data directory. */
export class Store {
  readonly sandboxes: SandboxStore;
  readonly sessions: SessionStore;
  readonly leases: LeaseStore;
  readonly callLog: CallLogStore;
  readonly agentTokens: AgentTokenStore;
  readonly checkpoints: CheckpointStore;
  /** Long operations of every process on this data dir (the task list). */
  readonly operations: OperationStore;
  /** Every process's events, for the others to tail (src/api/event-relay.ts). */
  readonly journal: EventJournal;
  /** Fires after each write to a table clients show (src/store/store-changes.ts). */
  readonly changes = new StoreChanges();
  /** Network policy per sandbox (its own table, see network-policy-store.ts). */
  readonly networkPolicies: NetworkPolicyStore;
  /** Warm pools' members (src/pool/): hidden sandbox rows waiting to be claimed. */
  readonly pools: PoolStore;
  /** Unique to this data directory; used to keep backend resource names of two data dirs apart. */
  readonly instanceId: string;

  private constructor(
    private readonly db: Db,
    readonly dataDir: string,
  ) {
    this.sandboxes = new SandboxStore(db);
    this.sessions = new SessionStore(db);
    this.leases = new LeaseStore(db);
    this.callLog = new CallLogStore(db);
    this.agentTokens = new AgentTokenStore(db);
    this.checkpoints = new CheckpointStore(db);
    this.operations = new OperationStore(db);
    this.journal = new EventJournal(db);
    this.networkPolicies = new NetworkPolicyStore(db);
    this.pools = new PoolStore(db);
    this.instanceId = instanceId(db);
    this.watchWrites();
  }

  private watchWrites(): void {
    const c = this.changes;
    const str = (v: unknown): string => String(v);
    c.watch(this.sandboxes, ['insert', 'setProvisioned', 'setDeclaredDefaultCwd', 'setHome', 'setLastObservedCwd', 'delete'], (m, a) => ({
      table: 'sandboxes',
      sandbox: m === 'insert' ? (a[0] as { name: string }).name : str(a[0]),
      what: m,
    }));
    c.watch(this.sessions, ['ensure', 'recordObserved', 'fillIfEmpty', 'setLastWarnings', 'delete'], (_m, a) => ({
      table: 'sessions',
      sandbox: str(a[0]),
      session: str(a[1]),
    }));
    c.watch(this.leases, ['acquire', 'release'], (_m, a) => ({ table: 'leases', sandbox: str(a[0]) }));
    c.watch(this.callLog, ['append'], (_m, a) => {
      const e = a[0] as { sandbox?: string | null; session?: string | null };
      return { table: 'call_log', sandbox: e.sandbox ?? null, session: e.session ?? null };
    });
  }

  static open(dataDir: string): Store {
    return new Store(openDatabase(dataDir), dataDir);
  }

  /** Runs `fn` in one transaction: all of its writes commit together or none do. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  close(): void {
    this.changes.dispose();
    this.leases.dispose();
    if (this.db.open) this.db.close();
  }
}
