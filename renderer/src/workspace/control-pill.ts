import type { AgentActionView, Lease } from '../../../src/api/contract.js';

export interface ControlPill {
  /** This viewer holds control (the screen takes its input). */
  mine: boolean;
  text: string;
  tone: 'ok' | 'warn' | 'agent' | 'unknown';
  /** More, for the pill's tooltip: the lease's reason, the agent's last action. */
  detail: string | null;
}

/**
 * Who holds the desktop, from this viewer's point of view (issue 36): the person ("You have control",
 * another viewer), the agent — named by the session of its last action on this desktop — or nobody: the
 * lease is the agent's by default, but until an agent has acted there is no agent to name, and saying
 * "Agent has control" then told a person something untrue.
 */
export function controlPill(lease: Lease | undefined, viewerId: string, lastAction: AgentActionView | null | undefined): ControlPill {
  const reason = lease?.reason ?? null;
  if (!lease) return { mine: false, text: 'control: …', tone: 'unknown', detail: null };
  if (lease.holder === 'human' && lease.viewerId === viewerId) return { mine: true, text: 'You have control', tone: 'ok', detail: reason };
  if (lease.holder === 'human') return { mine: false, text: 'Another viewer has control', tone: 'warn', detail: reason };
  if (lastAction === undefined) return { mine: false, text: 'control: …', tone: 'unknown', detail: null };
  if (lastAction === null)
    return {
      mine: false,
      text: 'Nobody has control · view only',
      tone: 'unknown',
      detail: 'no agent has acted on this desktop yet; Take control to drive it',
    };
  const who = lastAction.session ? `Agent (session ${lastAction.session})` : 'Agent';
  const last = `last: ${lastAction.kind}${lastAction.target ? ` at ${lastAction.target.x},${lastAction.target.y}` : ''} (${new Date(lastAction.at).toLocaleTimeString()})`;
  return { mine: false, text: `${who} has control · view only`, tone: 'agent', detail: reason ? `${last}; ${reason}` : last };
}
