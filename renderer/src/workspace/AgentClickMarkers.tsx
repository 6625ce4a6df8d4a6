import { useEffect, useState, type RefObject } from 'react';

/** How long a marker stays (it fades meanwhile: styles.css `agent-click`). */
export const AGENT_CLICK_SHOWN_MS = 1500;

/** An agent action with a point, as the live view draws it. */
export interface AgentMark {
  /** Unique per action (its time, kind and point). */
  key: string;
  kind: string;
  target: { x: number; y: number };
  /** The screen's size the point is in (the agent's screen pixels). */
  screen: { width: number; height: number };
  session: string | null;
}

/** A rectangle on the page (getBoundingClientRect's). */
interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

/**
 * Where a screen point lands in `layer`'s coordinates, given where the remote screen is drawn on the
 * page (`drawn`: noVNC's canvas, scaled to fit, 1:1 and scrolled, or resized — whatever the mode).
 * The point's pixel centre, so a click at 0,0 marks the first pixel. null when it falls outside the
 * drawn screen (clipped off in 1:1 mode) or nothing is drawn yet.
 */
export function markPosition(
  point: { x: number; y: number },
  screen: { width: number; height: number },
  drawn: Box,
  layer: Box,
): { left: number; top: number } | null {
  if (screen.width <= 0 || screen.height <= 0 || drawn.width <= 0 || drawn.height <= 0) return null;
  const x = drawn.left + ((point.x + 0.5) * drawn.width) / screen.width;
  const y = drawn.top + ((point.y + 0.5) * drawn.height) / screen.height;
  if (x < layer.left || y < layer.top || x > layer.left + layer.width || y > layer.top + layer.height) return null;
  return { left: x - layer.left, top: y - layer.top };
}

/**
 * The agent's clicks drawn on the live screen as they happen: a fading ripple where each landed, at
 * whatever scale this viewer shows the screen. `body` is the pane the markers are positioned in; the
 * screen is the canvas noVNC draws into it. Each mark is placed when it arrives and removes itself.
 */
export function AgentClickMarkers({ body, marks }: { body: RefObject<HTMLElement | null>; marks: AgentMark[] }) {
  return (
    <div className="agent-clicks" aria-hidden="true">
      {marks.map((m) => (
        <ClickMarker key={m.key} mark={m} body={body} />
      ))}
    </div>
  );
}

function ClickMarker({ mark, body }: { mark: AgentMark; body: RefObject<HTMLElement | null> }) {
  const [pos, setPos] = useState<{ left: number; top: number } | null>(null);
  useEffect(() => {
    const layer = body.current;
    const canvas = layer?.querySelector('.vnc-screen canvas');
    if (!layer || !canvas) return;
    setPos(markPosition(mark.target, mark.screen, canvas.getBoundingClientRect(), layer.getBoundingClientRect()));
  }, [mark, body]);
  if (!pos) return null;
  return (
    <span
      className={`agent-click agent-click-${mark.kind}`}
      data-testid="agent-click"
      data-kind={mark.kind}
      style={{ left: `${pos.left}px`, top: `${pos.top}px` }}
      title={`${mark.session ? `session ${mark.session}: ` : ''}${mark.kind} at ${mark.target.x},${mark.target.y}`}
    />
  );
}
