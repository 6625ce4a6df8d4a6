import { useEffect } from 'react';
import type { AgentRefusalView } from '../../../src/api/contract.js';

/** How long the notice stays after the last refusal. */
export const REFUSAL_SHOWN_MS = 6000;

/** What the agent tried, in words: "click at 100,200", "type", "set the clipboard". */
function attempt(r: AgentRefusalView): string {
  const verb = r.kind === 'key' ? 'press keys' : r.kind === 'move' ? 'move the pointer' : r.kind;
  return r.target ? `${verb} at ${r.target.x},${r.target.y}` : verb;
}

/** The notice's sentence: who tried what, and why it was refused (this viewer's control, or another's). */
export function refusalText(r: AgentRefusalView, viewerId: string): string {
  const who = r.session ? `Agent (session ${r.session})` : 'Agent';
  const why = r.viewerId === viewerId ? 'you have control' : 'a person has control';
  return `${who} tried to ${attempt(r)} — refused: ${why}`;
}

/**
 * An agent action refused while a person held control, on the screen pane: one notice at a time (the
 * newest replaces it, with how many came in a row), gone REFUSAL_SHOWN_MS after the last, or on ×.
 */
export function AgentRefusalNotice({
  refusal,
  count,
  viewerId,
  onDismiss,
}: {
  refusal: AgentRefusalView;
  count: number;
  viewerId: string;
  onDismiss: () => void;
}) {
  useEffect(() => {
    const t = setTimeout(onDismiss, REFUSAL_SHOWN_MS);
    return () => clearTimeout(t);
  }, [refusal, onDismiss]);
  return (
    <div className="agent-refusal notice notice-warn" role="status" data-testid="agent-refusal">
      <span>
        {refusalText(refusal, viewerId)}
        {count > 1 ? ` (${count} times)` : ''}
      </span>
      <button className="btn btn-icon btn-small" aria-label="Dismiss" onClick={onDismiss}>
        ×
      </button>
    </div>
  );
}
