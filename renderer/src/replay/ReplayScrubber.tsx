import type { ReplayEvent } from '../../../src/shared/replay-types.js';
import { formatOffset, formatReadout, fractionOf, type Span } from './timeline.js';

interface Props {
  span: Span;
  at: number;
  events: readonly ReplayEvent[];
  onSeek: (t: number) => void;
  /** true while the thumb is held (the screen then debounces its frames). */
  onDragging: (dragging: boolean) => void;
  onJump: (index: number) => void;
}

/**
 * The run as one slider: a native range input (keyboard and screen readers know it; the view takes
 * its arrow keys for event steps), with the events drawn as ticks above it — each tick a jump target.
 */
export function ReplayScrubber({ span, at, events, onSeek, onDragging, onJump }: Props) {
  const offset = at - span.startMs;
  const total = span.endMs - span.startMs;
  return (
    <div className="replay-scrubber">
      <div className="replay-track">
        <div className="replay-ticks" aria-hidden="true">
          {events.map((e, i) => (
            <span
              key={i}
              className={`replay-tick replay-tick-${e.kind}${e.warnings?.length || e.error ? ' replay-tick-warn' : ''}`}
              style={{ left: `${100 * fractionOf(Date.parse(e.at), span)}%` }}
              title={e.summary}
              data-testid="replay-tick"
              onClick={() => onJump(i)}
            />
          ))}
        </div>
        <input
          type="range"
          className="replay-range"
          data-testid="replay-scrubber"
          aria-label="Replay time"
          aria-valuetext={`${formatOffset(offset)} of ${formatOffset(total)}, ${new Date(at).toLocaleTimeString()}`}
          min={0}
          max={Math.max(0, total)}
          step={100}
          value={Math.max(0, Math.min(total, offset))}
          onChange={(e) => onSeek(span.startMs + Number(e.currentTarget.value))}
          onPointerDown={() => onDragging(true)}
          onPointerUp={() => onDragging(false)}
          onBlur={() => onDragging(false)}
        />
      </div>
      {/* Never clipped: it takes the room it needs (tabular digits, one shape for both sides). */}
      <span className="replay-time mono small" data-testid="replay-time">
        {formatReadout(offset, total)}
      </span>
    </div>
  );
}
