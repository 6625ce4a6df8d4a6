import { useCallback, useEffect, useRef, useState } from 'react';
import type { AgentActionView, AgentRefusalView, DesktopStatus, Lease } from '../../../src/api/contract.js';
import { DESKTOP_IMAGE } from '../../../src/shared/desktop-types.js';
import { AgentActionOverlay, AGENT_ACTION_SHOWN_MS } from './AgentActionOverlay.js';
import { AgentClickMarkers, AGENT_CLICK_SHOWN_MS, type AgentMark } from './AgentClickMarkers.js';
import { AgentRefusalNotice } from './AgentRefusalNotice.js';
import { controlPill } from './control-pill.js';
import { useEvents } from '../events/events-context.js';
import { DesktopCrashNotice } from './DesktopCrashNotice.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { elapsed } from '../ui/format.js';
import { useInterval } from '../hooks/useInterval.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';
import { loadScreenMode, popOutUrl, saveScreenMode, type ScreenMode } from './screen-view-mode.js';
import { ScreenToolbar } from './ScreenToolbar.js';
import { VncScreen, type ScreenLink } from './VncScreen.js';

interface Props {
  sandbox: string;
  visible: boolean;
  /** The popped-out page (just the screen): no Pop out button there. */
  standalone?: boolean;
  /** Opens the create dialog for a sandbox with a desktop (offered when this one's image has none). */
  onCreateDesktopSandbox?: () => void;
  /** Opens the Logs view at a source (the crash notice links the desktop launcher's log). */
  onShowLogs?: (source: string) => void;
}

/** How long the "View only — Take control" overlay stays after a click on a view-only screen. */
const VIEW_ONLY_HINT_MS = 4000;

function newViewerId(): string {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return `ui-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** At most this many click markers at once (an agent clicking in a burst). */
const MAX_MARKS = 20;

/** The live view's mark for an agent action with a point; null for typing, keys and the like. */
function markOf(a: Pick<AgentActionView, 'at' | 'kind' | 'target' | 'screen' | 'session'>): AgentMark | null {
  if (!a.target) return null;
  return {
    key: `${a.at}|${a.kind}|${a.target.x},${a.target.y}`,
    kind: a.kind,
    target: a.target,
    screen: a.screen,
    session: a.session ?? null,
  };
}

/**
 * The bot desktop: its status and Start button while it is not running, the live screen while it is.
 * The screen is view-only unless this viewer holds the control lease; Take control / Give back moves it.
 * A click on a view-only screen says so on the screen, with Take control; having control draws a
 * coloured frame. The toolbar sets how the desktop meets the pane (remembered), fullscreen, pop out.
 */
export function ScreenPane({ sandbox, visible, standalone = false, onCreateDesktopSandbox, onShowLogs }: Props) {
  const api = useApi();
  const [viewerId, setViewerId] = useState(newViewerId);
  // Each status is a probe inside the sandbox: every 2 s while waiting for a desktop, every 5 s once
  // it runs (a stopped desktop also shows sooner as a dropped screen stream).
  const [statusEvery, setStatusEvery] = useState(2000);
  const status = usePoll<DesktopStatus>(() => api.call('desktopStatus', { sandbox }), statusEvery, sandbox, visible, {
    live: touches.desktopOf(sandbox),
  });
  const running = status.data?.running === true;
  if ((running ? 5000 : 2000) !== statusEvery) setStatusEvery(running ? 5000 : 2000);
  const lease = usePoll<Lease>(() => api.call('lease', { sandbox }), 2000, sandbox, visible && running, { live: touches.leaseOf(sandbox) });
  // The agent's last action (from whichever process acted), shown over the screen for a few seconds.
  const lastAction = usePoll<AgentActionView | null>(() => api.call('desktopLastAction', { sandbox }), 1000, sandbox, visible && running, {
    live: touches.agentActionOf(sandbox),
  });
  const [busy, setBusy] = useState<{ what: 'start' | 'stop' | 'control'; since: number } | null>(null);
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const [link, setLink] = useState<ScreenLink>({ state: 'connecting', attempt: 0 });
  const [, setTick] = useState(0);
  useInterval(() => setTick((t) => t + 1), busy ? 1000 : null);

  // Not read yet: undefined (the pill waits); read as "none" (null) or unreadable (an older core): the
  // pill names no agent rather than waiting for one. (`data ?? …` took a read null for "not read yet".)
  const control = controlPill(lease.data, viewerId, lastAction.loading ? undefined : (lastAction.data ?? null));

  // The agent's clicks, drawn where they land as they happen: from the event stream (each action
  // carries its point), else from the last action as it is re-read. Each mark is drawn once.
  const events = useEvents();
  const [marks, setMarks] = useState<AgentMark[]>([]);
  const marked = useRef(new Set<string>());
  const addMark = useCallback((m: AgentMark | null) => {
    if (!m || marked.current.has(m.key)) return;
    marked.current.add(m.key);
    setMarks((all) => [...all, m].slice(-MAX_MARKS));
    setTimeout(() => {
      setMarks((all) => all.filter((x) => x.key !== m.key));
      marked.current.delete(m.key);
    }, AGENT_CLICK_SHOWN_MS);
  }, []);
  // Refused agent actions: one notice, the newest, with how many came in a row.
  const [refused, setRefused] = useState<{ refusal: AgentRefusalView; count: number } | null>(null);
  const dismissRefused = useCallback(() => setRefused(null), []);
  useEffect(() => {
    if (!events) return;
    return events.onEvent((e) => {
      if (e.topic === 'agentAction' && e.sandbox === sandbox && e.action) addMark(markOf(e.action));
      if (e.topic === 'agentRefused' && e.sandbox === sandbox)
        setRefused((prev) => ({ refusal: e.refusal, count: (prev?.count ?? 0) + 1 }));
    });
  }, [events, sandbox, addMark]);
  const last = lastAction.data;
  useEffect(() => {
    if (last && Date.now() - Date.parse(last.at) < AGENT_CLICK_SHOWN_MS) addMark(markOf(last));
  }, [last, addMark]);
  const [mode, setMode] = useState<ScreenMode>(loadScreenMode);
  const chooseMode = (m: ScreenMode) => {
    setMode(m);
    saveScreenMode(m);
  };
  const screenBox = useRef<HTMLDivElement>(null);
  const [viewOnlyHint, setViewOnlyHint] = useState(false);
  useEffect(() => {
    if (!viewOnlyHint) return;
    const t = setTimeout(() => setViewOnlyHint(false), VIEW_ONLY_HINT_MS);
    return () => clearTimeout(t);
  }, [viewOnlyHint]);
  if (viewOnlyHint && control.mine) setViewOnlyHint(false);
  const fullscreen = () => {
    const el = screenBox.current;
    if (!el) return;
    if (document.fullscreenElement === el) void document.exitFullscreen();
    else el.requestFullscreen?.().catch((err: unknown) => setError(describeError(err)));
  };
  const popOut = () => {
    // A tab of its own, same origin: it asks the API for its own single-use ticket like every viewer.
    const w = window.open(popOutUrl(sandbox), '_blank');
    if (!w) setError({ message: 'The browser blocked the new tab.', hint: 'allow pop-ups for this page, or open ' + popOutUrl(sandbox) });
  };

  async function act(what: 'start' | 'stop' | 'control', fn: () => Promise<unknown>, after: () => Promise<void>) {
    setBusy({ what, since: Date.now() });
    setError(null);
    try {
      await fn();
    } catch (err) {
      setError(describeError(err));
    }
    // Progress stays up until the fresh status is in: clearing it first would flash the old state
    // (e.g. "Start desktop" again for a moment after a successful start).
    try {
      await after();
    } finally {
      setBusy(null);
    }
  }

  // act shows a failure in the notice and refresh never rejects: the buttons need not wait.
  const start = () => void act('start', () => api.call('desktopStart', { sandbox }), status.refresh);
  const stop = () => void act('stop', () => api.call('desktopStop', { sandbox }), status.refresh);
  // The button is disabled while the call runs, which drops the focus to <body>: once the lease is
  // read again the same place holds the other button (Give back ⇄ Take control), and the focus goes there.
  const controlButton = useRef<HTMLButtonElement>(null);
  const refocusControl = useRef(false);
  useEffect(() => {
    if (busy === null && refocusControl.current) {
      refocusControl.current = false;
      controlButton.current?.focus();
    }
  }, [busy]);
  const toggleControl = () => {
    refocusControl.current = true;
    void act(
      'control',
      () => (control.mine ? api.call('giveBack', { sandbox, viewerId }) : api.call('takeControl', { sandbox, viewerId })),
      lease.refresh,
    );
  };

  return (
    <section className="pane screen-pane" data-testid="screen-pane" aria-label="Desktop">
      <header className="pane-head">
        <span className="pane-title">Desktop</span>
        {running && (
          <>
            <span
              className={`pill pill-${link.state === 'connected' ? 'ok' : 'warn'}`}
              title={link.state === 'retrying' ? link.why : undefined}
            >
              {link.state === 'connected'
                ? 'live'
                : link.state === 'connecting'
                  ? 'connecting…'
                  : `reconnecting in ${Math.ceil(link.inMs / 1000)} s`}
            </span>
            <span className={`pill pill-${control.tone}`} data-testid="lease-indicator" title={control.detail ?? undefined}>
              {control.text}
            </span>
            <span className="spacer" />
            <button
              className={`btn btn-small ${control.mine ? 'btn-accent' : 'btn-primary'}`}
              data-testid="take-control"
              ref={controlButton}
              disabled={busy !== null}
              onClick={toggleControl}
              title={
                control.mine
                  ? 'Hand the keyboard and mouse back to the agent'
                  : 'Drive the desktop yourself; the agent waits until you give it back'
              }
            >
              {control.mine ? 'Give back' : 'Take control'}
            </button>
            <button className="btn btn-small" data-testid="desktop-stop" disabled={busy !== null} onClick={stop}>
              {busy?.what === 'stop' ? 'Stopping…' : 'Stop desktop'}
            </button>
          </>
        )}
        {status.data?.display && <span className="muted small mono">{`${status.data.display} ${status.data.geometry ?? ''}`}</span>}
        {running && status.data?.displayIsolation === 'shared' && (
          // The lease only binds what goes through the app: say plainly when the sandbox's shell can reach the display too.
          <span className="pill pill-warn" data-testid="display-shared" title={status.data.displayIsolationReason ?? undefined}>
            display shared with the sandbox's shell
          </span>
        )}
      </header>

      {error && (
        <div className="notice notice-error" role="alert">
          {error.message}
          {error.hint && <div className="hint">{error.hint}</div>}
        </div>
      )}

      {running && control.mine && (
        // Once the screen has the keyboard every key goes to the desktop: say how to get it back, with
        // the window's own shortcut (Alt+Shift in a browser tab, where Ctrl+Shift+D is the browser's).
        <div className="small muted screen-keyboard-hint" data-testid="keyboard-hint">
          The desktop has your keyboard. <kbd>{window.sandboxDesk ? 'Ctrl+Shift+D' : 'Alt+Shift+D'}</kbd> takes it back to the window
          (details view); <b>Give back</b> returns control to the agent.
        </div>
      )}
      {running && (
        <ScreenToolbar
          mode={mode}
          onMode={chooseMode}
          viewOnly={!control.mine}
          onFullscreen={fullscreen}
          onPopOut={standalone ? undefined : popOut}
        />
      )}

      <div
        ref={screenBox}
        className={`pane-body screen-body${running && control.mine ? ' has-control' : ''}`}
        data-testid="screen-body"
        onPointerDownCapture={() => {
          if (running && !control.mine) setViewOnlyHint(true);
        }}
      >
        {!status.data && status.loading && <div className="center muted">Checking the desktop…</div>}
        {!status.data && status.error && (
          <div className="center">
            <div className="notice notice-error" role="alert">
              {status.error.message}
              {status.error.hint && <div className="hint">{status.error.hint}</div>}
            </div>
          </div>
        )}
        {/* The frame an action named (or what a pointless action did: typing, keys); a plain click is the
            ring where it landed (AgentClickMarkers), without dimming the live screen. */}
        {running &&
          lastAction.data &&
          (lastAction.data.frame || !lastAction.data.target) &&
          Date.now() - Date.parse(lastAction.data.at) < AGENT_ACTION_SHOWN_MS && (
            <AgentActionOverlay key={lastAction.data.at} view={lastAction.data} />
          )}
        {running && (
          <VncScreen
            sandbox={sandbox}
            viewerId={viewerId}
            viewOnly={!control.mine}
            mode={mode}
            onLink={setLink}
            onViewerId={(id) => id !== viewerId && setViewerId(id)}
          />
        )}
        {running && <AgentClickMarkers body={screenBox} marks={marks} />}
        {running && refused && (
          <AgentRefusalNotice refusal={refused.refusal} count={refused.count} viewerId={viewerId} onDismiss={dismissRefused} />
        )}
        {running && viewOnlyHint && (
          <div className="view-only-hint" role="status" data-testid="view-only-hint">
            <span>{control.tone === 'warn' ? 'View only — another viewer has control' : 'View only'} — </span>
            <button
              className="btn btn-small btn-primary"
              disabled={busy !== null}
              onClick={() => {
                setViewOnlyHint(false);
                toggleControl();
              }}
            >
              Take control
            </button>
          </div>
        )}
        {status.data && !running && (
          <DesktopOff
            status={status.data}
            starting={busy?.what === 'start' ? busy.since : null}
            onStart={start}
            disabled={busy !== null}
            onCreateDesktopSandbox={onCreateDesktopSandbox}
            onShowLogs={onShowLogs}
          />
        )}
      </div>
    </section>
  );
}

/** Without these the desktop cannot start at all; without only Chromium it runs with no browser. */
function blockingMissing(missing: string[]): boolean {
  return missing.some((b) => b !== 'chromium');
}

function DesktopOff({
  status,
  starting,
  onStart,
  disabled,
  onCreateDesktopSandbox,
  onShowLogs,
}: {
  status: DesktopStatus;
  starting: number | null;
  onStart: () => void;
  disabled: boolean;
  onCreateDesktopSandbox?: (() => void) | undefined;
  onShowLogs?: ((source: string) => void) | undefined;
}) {
  const refused = status.placement === 'refused';
  if (blockingMissing(status.missing)) {
    // One line, each missing part named once; no Start that could only fail with the same list.
    return (
      <div className="center desktop-off">
        <div className="desktop-off-card" data-testid="desktop-unavailable">
          <h4>No desktop here</h4>
          <p data-testid="desktop-missing">
            {status.placement === 'host' ? 'This machine' : "This sandbox's image"} lacks the desktop's parts:{' '}
            <span className="mono">{status.missing.join(', ')}</span>.
          </p>
          {onCreateDesktopSandbox && (
            <button className="btn btn-primary" data-testid="create-desktop-sandbox" onClick={onCreateDesktopSandbox}>
              Create a desktop sandbox ({DESKTOP_IMAGE})
            </button>
          )}
        </div>
      </div>
    );
  }
  return (
    <div className="center desktop-off">
      <div className="desktop-off-card">
        <h4>The desktop is not running</h4>
        {status.ended && <DesktopCrashNotice sandbox={status.sandbox} ended={status.ended} onShowLogs={onShowLogs} />}
        <dl className="kv kv-compact">
          <dt>Placement</dt>
          <dd data-testid="desktop-placement">{refused ? <span className="text-bad">refused</span> : `in the ${status.placement}`}</dd>
          {status.missing.length > 0 && (
            <>
              <dt>Missing</dt>
              <dd data-testid="desktop-missing" className="mono">
                {status.missing.join(', ')} — the desktop runs without a browser
              </dd>
            </>
          )}
          {status.reason && status.missing.length === 0 && (
            <>
              <dt>Why</dt>
              <dd data-testid="desktop-reason">{status.reason}</dd>
            </>
          )}
        </dl>
        {!refused && (
          <button className="btn btn-primary" data-testid="desktop-start" onClick={onStart} disabled={disabled}>
            {starting !== null ? 'Starting…' : 'Start desktop'}
          </button>
        )}
        {starting !== null && (
          <div className="progress" role="status">
            <span className="spinner" aria-hidden="true" /> Starting Xvnc, Xfce and Chromium… {elapsed(starting)}
          </div>
        )}
      </div>
    </div>
  );
}
