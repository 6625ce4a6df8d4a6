import { useEffect, useRef, useState, type CSSProperties } from 'react';
import type { ReplayFrame } from '../../../src/shared/replay-types.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { replayCall, type RecordingIndicator } from './replay-api.js';
import { formatOffset, PLAY_FRAME_EVERY_MS, playFrameWidth } from './timeline.js';

interface Props {
  sandbox: string;
  /** The time to show; null: no screen was recorded. */
  at: number | null;
  /** Set when t is before the screen recording began: its start, as an offset into the run. */
  before?: number | null;
  /** Wait this long after the last change before asking (dragging); 0 while playing or stepping. */
  debounceMs: number;
  /** The selected action's point, in screen coordinates, drawn over the frame. */
  point: { x: number; y: number } | null;
  recording: RecordingIndicator | null;
  /** While playing, frames follow the playhead at a bounded rate (PLAY_FRAME_EVERY_MS), not every time tick. */
  playing?: boolean;
}

/**
 * The recorded screen at time t: `replayFrame` decoded by the core, shown as an image. One request
 * at a time and the latest wins; the last image stays until the next one has arrived, so the picture
 * never blanks while scrubbing. While playing, a loop asks for the frame at the playhead every
 * PLAY_FRAME_EVERY_MS (one in flight, at the pane's size): the core walks its cursor forward from the
 * last keyframe through the recorded updates, so 4× and 16× show the screen between keyframes.
 * The frame is scaled to fit the pane (width and height), whatever the window's size.
 */
export function ReplayScreen({ sandbox, at, before = null, debounceMs, point, recording, playing = false }: Props) {
  const api = useApi();
  const [frame, setFrame] = useState<ReplayFrame | null>(null);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const [loading, setLoading] = useState(false);
  const want = useRef<number | null>(null);
  const busy = useRef(false);
  const alive = useRef(true);
  const sandboxRef = useRef(sandbox);
  sandboxRef.current = sandbox;
  const atRef = useRef(at);
  atRef.current = at;
  const stage = useRef<HTMLDivElement>(null);
  const screenWidth = useRef<number | null>(null);
  /** The paused path's pump: a playing request that ends after the pause hands over to it. */
  const pumpRef = useRef<(() => Promise<void>) | null>(null);

  useEffect(() => {
    alive.current = true;
    return () => {
      alive.current = false;
    };
  }, []);

  useEffect(() => {
    setFrame(null);
    setError(null);
  }, [sandbox]);

  // Playback: the frame at the playhead, at a bounded rate, whatever the time ticks do.
  useEffect(() => {
    if (!playing) return;
    let stopped = false;
    let shown: number | null = null;
    const loop = async (): Promise<void> => {
      while (!stopped && alive.current) {
        const began = performance.now();
        const t = atRef.current;
        if (t !== null && t !== shown && !busy.current) {
          shown = t;
          busy.current = true;
          const box = sandboxRef.current;
          const maxWidth = playFrameWidth(stage.current?.clientWidth ?? 0, window.devicePixelRatio, screenWidth.current);
          try {
            const f = await replayCall(api, 'replayFrame', {
              sandbox: box,
              at: new Date(t).toISOString(),
              format: 'png',
              ...(maxWidth !== undefined ? { maxWidth } : {}),
            });
            if (!stopped && alive.current && box === sandboxRef.current) {
              setFrame(f);
              setError(null);
            }
          } catch (err) {
            if (!stopped && alive.current && box === sandboxRef.current) setError(describeError(err));
          } finally {
            busy.current = false;
            // Paused while this was in flight: the frame at the stop was left waiting for it.
            if (want.current !== null) void pumpRef.current?.();
          }
        }
        const rest = Math.max(0, PLAY_FRAME_EVERY_MS - (performance.now() - began));
        await new Promise((resolve) => setTimeout(resolve, rest));
      }
    };
    void loop();
    return () => {
      stopped = true;
    };
  }, [api, playing]);

  useEffect(() => {
    // While playing the loop above asks; once paused, the frame at the stop (full size) is asked here.
    if (at === null || playing) return;
    const pump = async (): Promise<void> => {
      if (busy.current || want.current === null) return;
      const t = want.current;
      const box = sandboxRef.current;
      want.current = null;
      busy.current = true;
      setLoading(true);
      try {
        const f = await replayCall(api, 'replayFrame', { sandbox: box, at: new Date(t).toISOString(), format: 'png' });
        if (alive.current && box === sandboxRef.current) {
          setFrame(f);
          setError(null);
        }
      } catch (err) {
        if (alive.current && box === sandboxRef.current) setError(describeError(err));
      } finally {
        busy.current = false;
        if (alive.current) setLoading(want.current !== null);
      }
      void pump();
    };
    pumpRef.current = pump;
    want.current = at;
    const timer = setTimeout(() => void pump(), debounceMs);
    return () => clearTimeout(timer);
  }, [api, at, debounceMs, playing]);

  useEffect(() => {
    // The screen's own width (a frame's width / its scale): playing frames are never asked above it.
    if (frame && frame.scale > 0) screenWidth.current = Math.round(frame.width / frame.scale);
  }, [frame]);

  // The frame is scaled by `scale` from the screen; the point is in screen coordinates.
  const dot =
    point && frame && frame.width > 0 && frame.height > 0
      ? {
          left: `${(100 * (point.x + 0.5) * frame.scale) / frame.width}%`,
          top: `${(100 * (point.y + 0.5) * frame.scale) / frame.height}%`,
        }
      : null;

  return (
    <section className="replay-screen card" aria-label="Recorded screen" data-testid="replay-screen">
      <h3>
        Screen
        {recording?.on && (
          <span className="replay-rec" data-testid="replay-rec-screen" title="The desktop is being recorded">
            ● REC
          </span>
        )}
        {frame && (
          <span className="muted small mono" data-testid="replay-frame-at">
            {' '}
            {new Date(frame.at).toLocaleTimeString()} · {Math.round(frame.width / frame.scale)}×{Math.round(frame.height / frame.scale)}
          </span>
        )}
        {loading && <span className="muted small"> loading…</span>}
      </h3>
      {recording?.warning && (
        <div className="notice notice-warn" role="status" data-testid="replay-rec-warning">
          {recording.warning}
        </div>
      )}
      {before !== null && (
        <div className="muted small" data-testid="replay-screen-before">
          The screen recording begins at {formatOffset(before)}; this is its first frame.
        </div>
      )}
      {at === null ? (
        <div className="muted empty-inline">No screen was recorded for this sandbox.</div>
      ) : (
        <div className="replay-stage" ref={stage}>
          <div
            className="replay-frame"
            data-testid="replay-frame-box"
            style={frame ? ({ '--replay-ratio': `${frame.width / Math.max(1, frame.height)}` } as CSSProperties) : undefined}
          >
            {frame && (
              <img
                data-testid="replay-frame"
                data-at={frame.at}
                className={error ? 'replay-frame-stale' : undefined}
                src={`data:image/${frame.format};base64,${frame.data}`}
                alt={`The screen at ${new Date(frame.at).toLocaleTimeString()}`}
              />
            )}
            {dot && <span className="replay-point" data-testid="replay-point" style={dot} aria-hidden="true" />}
          </div>
        </div>
      )}
      {error && (
        <div className="notice notice-error" role="alert" data-testid="replay-frame-error">
          {error.message}
          {error.hint && <span className="muted small">{error.hint}</span>}
        </div>
      )}
    </section>
  );
}
