import { NetworkPolicyStore } from './network-policy-store.js';
import { openDatabase, instanceId, type Db } from './database.js';
import { AgentTokenStore } from './agent-token-store.js';
import { CallLogStore } from './call-log-store.js';
import { LeaseStore } from './lease-store.js';
import { SandboxStore } from './sandbox-store.js';
import { SessionStore } from './session-store.js';

/** The app's persisted state: one SQLite database in the data directory. */
export class Store {
  readonly sandboxes: SandboxStore;
  readonly sessions: SessionStore;
  readonly leases: LeaseStore;
  readonly callLog: CallLogStore;
  readonly agentTokens: AgentTokenStore;
  /** Network policy per sandbox (its own table, see network-policy-store.ts). */
  readonly networkPolicies: NetworkPolicyStore;
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
    this.networkPolicies = new NetworkPolicyStore(db);
    this.instanceId = instanceId(db);
  }

  static open(dataDir: string): Store {
    return new Store(openDatabase(dataDir), dataDir);
  }

  /** Runs `fn` in one transaction: all of its writes commit together or none do. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
