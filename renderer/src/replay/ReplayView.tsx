import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { useApi } from '../app/api-context.js';
import { touches } from '../events/topics.js';
import { usePoll } from '../hooks/usePoll.js';
import { recordingOf, replayCall } from './replay-api.js';
import { ReplayEventList } from './ReplayEventList.js';
import { ReplayExport } from './ReplayExport.js';
import { ReplayScreen } from './ReplayScreen.js';
import { ReplayScrubber } from './ReplayScrubber.js';
import { ReplayTerminal } from './ReplayTerminal.js';
import { clamp, currentEventIndex, frameTimeOf, nextEventAt, previousEventAt, spanOf, SPEEDS, type Speed } from './timeline.js';
import './replay.css';

interface Props {
  sandbox: string;
  /** Reading and playback stop while another view is shown. */
  visible: boolean;
}

/** How often playback moves the time on (the screen asks for frames as fast as they come). */
const PLAY_TICK_MS = 100;
/** While the scrubber is dragged, a frame is asked for once it rests this long. */
const DRAG_DEBOUNCE_MS = 120;
/** Shift+←/→ move by this much. */
const NUDGE_MS = 5000;

/**
 * What happened in a sandbox, on one clock: a scrubber over the run with the events as ticks, the
 * recorded screen and terminal at the chosen time, and the calls and commands (with their cwd and
 * session) as jump targets. Laid out to fit the window without page scrolling (1280×720 and up): the
 * scrubber on top, the screen scaled into the space left, the event list scrolling in its own pane. Plays at 1×, 4× or 16×; the keyboard drives it (the help line says how). Re-reads on
 * the `replay` topic (and the stores the events come from) while a recording grows.
 */
export function ReplayView({ sandbox, visible }: Props) {
  const api = useApi();
  const liveReplay = touches.replayOf(sandbox);
  const liveCalls = touches.replayCallsOf(sandbox);
  const live = (e: Parameters<typeof liveReplay>[0]) => liveReplay(e) || liveCalls(e);
  const list = usePoll(() => replayCall(api, 'replayList', { sandbox }), 3000, sandbox, visible, { live: liveReplay });
  const answer = usePoll(() => replayCall(api, 'replayEvents', { sandbox }), 3000, sandbox, visible, { live });
  const desktop = usePoll(() => api.call('desktopStatus', { sandbox }), 3000, sandbox, visible, { live: liveReplay });

  const rec = list.data?.recordings.find((r) => r.sandbox === sandbox) ?? null;
  const events = useMemo(() => answer.data?.events ?? [], [answer.data]);
  const span = spanOf(answer.data, rec);
  const recording = recordingOf(desktop.data);

  // null: the end of the run (and it follows a recording that grows).
  const [t, setT] = useState<number | null>(null);
  const [playing, setPlaying] = useState(false);
  const [speed, setSpeed] = useState<Speed>(1);
  const [dragging, setDragging] = useState(false);
  const [selected, setSelected] = useState<number | null>(null);
  const [terminalId, setTerminalId] = useState<string | null>(null);
  const at = span ? clamp(t ?? span.endMs, span) : null;

  const spanRef = useRef(span);
  spanRef.current = span;
  useEffect(() => {
    setT(null);
    setPlaying(false);
    setSelected(null);
    setTerminalId(null);
  }, [sandbox]);

  // Playback: the time moves on by the wall clock × speed; it stops at the end.
  useEffect(() => {
    if (!playing || !visible) return;
    let last = performance.now();
    const id = setInterval(() => {
      const now = performance.now();
      const step = (now - last) * speed;
      last = now;
      const s = spanRef.current;
      if (!s) return;
      setT((prev) => {
        const next = (prev ?? s.endMs) + step;
        if (next >= s.endMs) {
          setPlaying(false);
          return s.endMs;
        }
        return next;
      });
    }, PLAY_TICK_MS);
    return () => clearInterval(id);
  }, [playing, speed, visible]);

  const seek = useCallback((to: number) => {
    setSelected(null);
    setT(to);
  }, []);

  const jump = useCallback(
    (index: number) => {
      const e = events[index];
      if (!e) return;
      setPlaying(false);
      setSelected(index);
      setT(frameTimeOf(e));
      if (e.terminalId) setTerminalId(e.terminalId);
    },
    [events],
  );

  const step = (dir: -1 | 1) => {
    if (at === null) return;
    const to = dir > 0 ? nextEventAt(events, at) : previousEventAt(events, at);
    if (to === null) return;
    setPlaying(false);
    const index = events.findIndex((e) => Date.parse(e.at) === to);
    setSelected(index >= 0 ? index : null);
    setT(to);
    const e = events[index];
    if (e?.terminalId) setTerminalId(e.terminalId);
  };

  const togglePlay = () => {
    if (!span) return;
    if (!playing && (at ?? span.endMs) >= span.endMs) setT(span.startMs);
    setSelected(null);
    setPlaying((p) => !p);
  };

  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const target = e.target as HTMLElement;
    const tag = target.tagName;
    const range = tag === 'INPUT' && (target as HTMLInputElement).type === 'range';
    if ((tag === 'INPUT' && !range) || tag === 'SELECT' || tag === 'TEXTAREA') return;
    if (tag === 'BUTTON' && (e.key === ' ' || e.key === 'Enter')) return;
    if (!span || e.ctrlKey || e.metaKey || e.altKey) return;
    const done = () => e.preventDefault();
    if (e.key === ' ') {
      togglePlay();
      done();
    } else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
      if (e.shiftKey && at !== null) seek(clamp(at + (e.key === 'ArrowRight' ? NUDGE_MS : -NUDGE_MS), span));
      else step(e.key === 'ArrowRight' ? 1 : -1);
      done();
    } else if (e.key === 'Home') {
      seek(span.startMs);
      done();
    } else if (e.key === 'End') {
      seek(span.endMs);
      done();
    } else {
      const s = SPEEDS.find((x) => x.key === e.key);
      if (s) {
        setSpeed(s.speed);
        done();
      }
    }
  };

  const error = answer.error ?? list.error;
  const current = at === null ? -1 : currentEventIndex(events, at);
  const chosen = selected !== null ? events[selected] : undefined;
  const terminals = rec?.terminals ?? [];
  // The screen has its own span inside the run's: before it there is no picture; after it (a desktop
  // stopped, or no update since) the last frame is what the screen showed.
  const screenSpan = rec?.screen ? spanOf(rec.screen) : null;
  const screenAt = rec && !rec.screen ? null : at === null ? null : screenSpan ? clamp(at, screenSpan) : at;

  return (
    <div
      className="replay"
      role="region"
      aria-label={`Replay of ${sandbox}`}
      aria-describedby="replay-help"
      data-testid="replay-view"
      onKeyDown={onKey}
    >
      {error && (
        <div className="notice notice-error" role="alert" data-testid="replay-error">
          {error.message}
          {error.hint && <span className="muted small">{error.hint}</span>}
        </div>
      )}
      {!span && !answer.loading && !error && (
        <div className="empty-inline muted" data-testid="replay-empty">
          Nothing recorded for <b>{sandbox}</b> yet. A desktop an agent drives is recorded from its start (off with <code>--no-record</code>
          ); terminals and agent calls are recorded on the same clock.
        </div>
      )}
      {span && at !== null && (
        <>
          <div className="replay-controls">
            <button type="button" className="btn btn-small" data-testid="replay-play" aria-pressed={playing} onClick={togglePlay}>
              {playing ? 'Pause' : 'Play'}
            </button>
            <div className="segmented" role="group" aria-label="Playback speed">
              {SPEEDS.map((s) => (
                <button
                  key={s.speed}
                  type="button"
                  className={speed === s.speed ? 'on' : ''}
                  aria-pressed={speed === s.speed}
                  data-testid={`replay-speed-${s.speed}`}
                  onClick={() => setSpeed(s.speed)}
                >
                  {s.speed}×
                </button>
              ))}
            </div>
            <ReplayScrubber span={span} at={at} events={events} onSeek={seek} onDragging={setDragging} onJump={jump} />
          </div>
          <p className="replay-help muted small" id="replay-help" data-testid="replay-help">
            <kbd>Space</kbd> play/pause · <kbd>←</kbd>/<kbd>→</kbd> previous/next event · <kbd>Shift</kbd>+<kbd>←</kbd>/<kbd>→</kbd> 5 s ·{' '}
            <kbd>Home</kbd>/<kbd>End</kbd> start/end · <kbd>1</kbd>/<kbd>4</kbd>/<kbd>6</kbd> speed 1×/4×/16×
          </p>
          {/* Screen, events and terminal share the height left under the scrubber: nothing pushes the scrubber away. */}
          <div className="replay-body">
            <ReplayScreen
              sandbox={sandbox}
              at={screenAt}
              before={screenSpan !== null && at < screenSpan.startMs ? screenSpan.startMs - span.startMs : null}
              debounceMs={dragging ? DRAG_DEBOUNCE_MS : 0}
              point={chosen?.point ?? null}
              recording={recording}
              playing={playing && visible}
            />
            <ReplayEventList
              events={events}
              startMs={span.startMs}
              current={current}
              selected={selected}
              onJump={jump}
              recording={recording}
            />
            <ReplayTerminal sandbox={sandbox} terminals={terminals} selected={terminalId} onSelect={setTerminalId} at={at} />
          </div>
          {rec?.warnings.map((w) => (
            <div key={w} className="notice notice-warn" role="status" data-testid="replay-warning">
              {w}
            </div>
          ))}
          <ReplayExport sandbox={sandbox} span={span} />
        </>
      )}
    </div>
  );
}
