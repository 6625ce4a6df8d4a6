import { useEffect, useState } from 'react';
import type { AgentActionView } from '../../../src/api/contract.js';

/** How long the agent's last action stays over the screen. */
export const AGENT_ACTION_SHOWN_MS = 4000;

/**
 * What the agent last did, over the live screen: the frame it acted on (when it named one) with the
 * point it aimed at, so a person sees the coordinates the agent used, not only their effect. Goes
 * away by itself after AGENT_ACTION_SHOWN_MS.
 */
export function AgentActionOverlay({ view }: { view: AgentActionView }) {
  const left = AGENT_ACTION_SHOWN_MS - (Date.now() - Date.parse(view.at));
  const [shown, setShown] = useState(left > 0);
  useEffect(() => {
    if (left <= 0) return;
    const timer = setTimeout(() => setShown(false), left);
    return () => clearTimeout(timer);
  }, [left]);
  if (!shown) return null;
  const { width, height } = view.screen;
  const point =
    view.target && width > 0 && height > 0
      ? { left: `${(100 * (view.target.x + 0.5)) / width}%`, top: `${(100 * (view.target.y + 0.5)) / height}%` }
      : null;
  return (
    <div className="agent-action" data-testid="agent-action" aria-live="polite">
      <div className="agent-action-frame" style={{ aspectRatio: width > 0 && height > 0 ? `${width} / ${height}` : undefined }}>
        {view.frame && (
          <img data-testid="agent-action-frame" src={view.frame.image} alt={`frame ${view.frame.frameId} the agent acted on`} />
        )}
        {point && <span className="agent-action-point" data-testid="agent-action-point" style={point} />}
      </div>
      <span className="agent-action-label">
        agent {view.kind}
        {view.target ? ` at ${view.target.x},${view.target.y}` : ''}
        {view.frame ? ` (frame ${view.frame.frameId}, ${view.frame.width}x${view.frame.height})` : ''}
      </span>
    </div>
  );
}
