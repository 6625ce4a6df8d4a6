/** Who may drive a sandbox's desktop: the agent, or one human viewer. Types only (the UI imports them). */
export interface Lease {
  holder: 'agent' | 'human';
  /** The viewer holding it, when a human does. */
  viewerId: string | null;
  /** Incremented on every change of hands. */
  epoch: number;
  since: string;
  reason: string | null;
}
