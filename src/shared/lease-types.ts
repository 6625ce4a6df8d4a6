/** Who may drive a sandbox's desktop: the agent, or one human viewer. Types and two constants (the UI and the CLI import them). */
export interface Lease {
  holder: 'agent' | 'human';
  /** The viewer holding it, when a human does. */
  viewerId: string | null;
  /** Incremented on every change of hands. */
  epoch: number;
  since: string;
  reason: string | null;
}

/** The longest one wait may take; an agent that wants longer calls again (MCP clients time requests out). */
export const CONTROL_WAIT_MAX_MS = 600_000;
/** What `wait_for_control` / `desktop wait-control` wait when given no timeout. */
export const CONTROL_WAIT_DEFAULT_MS = 30_000;

/** What waiting for control (`wait_for_control`, `desktop wait-control`, the API's waitForControl) answers. */
export interface ControlWait {
  sandbox: string;
  /** true: nobody but the agent holds the lease; actions will not be refused with human_has_control. */
  mayAct: boolean;
  holder: Lease['holder'];
  /** The person's viewer while a person holds control. */
  viewerId: string | null;
  waitedMs: number;
  /** true: the timeout passed with a person still in control (an answer, not an error). */
  timedOut: boolean;
  /** The lease's reason (e.g. "taken by a viewer", "given back"). */
  reason: string | null;
}
