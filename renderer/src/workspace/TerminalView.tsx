import { AttachAddon } from '@xterm/addon-attach';
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import { useEffect, useRef, useState } from 'react';
import { CLOSE as STREAM_CLOSE, TICKET_REFUSALS } from '../../../src/shared/stream-close-codes.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { shortcutOf } from '../app/shortcuts.js';
import { currentColorScheme, TERMINAL_THEMES, watchColorScheme } from '../app/color-scheme.js';
import type { TerminalInfo } from '../../../src/shared/terminal-types.js';

declare global {
  interface Window {
    /** For end-to-end tests: the live xterm instance of each open terminal, by session key. */
    __sdeskTerminals?: Record<string, Terminal>;
  }
}

interface Props {
  sandbox: string;
  session: string;
  active: boolean;
  /** The core's terminal this view shows, and where its shell started, once the server said. */
  onStarted?: (cwd: string, terminalId: string) => void;
}

type Link =
  | { state: 'opening' }
  | { state: 'restarting' }
  | { state: 'open' }
  | { state: 'closed'; why: string }
  | { state: 'failed'; why: string; hint?: string };

/** How often a view whose sandbox is being restored asks whether its terminal is back. */
export const RESTART_POLL_MS = 1000;

/** Why a terminal stream closed, in words (the close codes are the shared table the server closes with). */
function closeReason(e: CloseEvent): string {
  if (e.code === 1000) return e.reason || 'the shell exited';
  if ((TICKET_REFUSALS as readonly number[]).includes(e.code)) return `ticket refused (${e.reason || e.code})`;
  if (e.code === STREAM_CLOSE.originRefused) return 'origin refused';
  return e.reason ? `${e.reason} (${e.code})` : `connection closed (${e.code})`;
}

/**
 * One terminal: xterm.js on the server's PTY WebSocket. The shell lives in the core until its tab is
 * closed (TerminalPane calls terminalClose): this view unmounting (another sandbox selected, a reload)
 * only detaches. On mount it reattaches to the session's open terminal if the core has one — the core
 * replays its scrollback first — and opens a new shell only when there is none. Reconnect does the
 * same: the same shell if it still runs, else a new one in the session's cwd record.
 * A restore of the sandbox ends the shell and brings it back under the same terminal id: the stream
 * closes with `restarting`, and the view waits (listed `restarting` meanwhile) and reattaches to it —
 * the scrollback it gets is what the tab showed before, then the new prompt.
 */
export function TerminalView({ sandbox, session, active, onStarted }: Props) {
  const api = useApi();
  const host = useRef<HTMLDivElement>(null);
  const termRef = useRef<{ term: Terminal; fit: () => void } | null>(null);
  const [link, setLink] = useState<Link>({ state: 'opening' });
  const [generation, setGeneration] = useState(0);
  const onStartedRef = useRef(onStarted);
  onStartedRef.current = onStarted;

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    let disposed = false;
    let ws: WebSocket | null = null;
    let terminalId: string | null = null;
    let sent = { cols: 0, rows: 0 };

    const term = new Terminal({
      fontFamily: '"JetBrains Mono", "DejaVu Sans Mono", "Cascadia Mono", Menlo, monospace',
      fontSize: 13,
      lineHeight: 1.15,
      // A blinking cursor is motion: off when the person asked the system for less of it.
      cursorBlink: !window.matchMedia?.('(prefers-reduced-motion: reduce)').matches,
      scrollback: 5000,
      allowProposedApi: false,
      theme: TERMINAL_THEMES[currentColorScheme()],
    });
    // The terminal's colours follow the system's light/dark switch like the rest of the window.
    const stopWatchingScheme = watchColorScheme((scheme) => (term.options.theme = TERMINAL_THEMES[scheme]));
    const fitAddon = new FitAddon();
    term.loadAddon(fitAddon);
    term.open(el);
    // The app's shortcuts must reach the window, not the shell.
    term.attachCustomKeyEventHandler((e) => shortcutOf(e) === null);
    (window.__sdeskTerminals ??= {})[session] = term;

    // Hidden tabs have no size; fitting them would shrink the terminal to nothing.
    const fit = () => {
      if (el.clientWidth > 0 && el.clientHeight > 0) fitAddon.fit();
    };
    const syncSize = () => {
      fit();
      if (!terminalId || (term.cols === sent.cols && term.rows === sent.rows)) return;
      sent = { cols: term.cols, rows: term.rows };
      api.call('terminalResize', { terminalId, cols: term.cols, rows: term.rows }).catch(() => undefined);
    };
    termRef.current = { term, fit: syncSize };
    fit();

    let debounce: ReturnType<typeof setTimeout> | null = null;
    const observer =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            if (debounce) clearTimeout(debounce);
            debounce = setTimeout(syncSize, 100);
          });
    observer?.observe(el);

    // A view remade because its terminal restarts keeps saying so until it is back.
    setLink((l) => (l.state === 'restarting' ? l : { state: 'opening' }));
    /** The session's terminal in the core, once it is not restarting (a restore brings it back under its id). */
    const sessionTerminal = async (): Promise<TerminalInfo | undefined> => {
      for (;;) {
        const t = (await api.call('listTerminals', { sandbox })).find((x) => x.session === session);
        if (!t?.restarting || disposed) return t;
        setLink({ state: 'restarting' });
        await new Promise((r) => setTimeout(r, RESTART_POLL_MS));
      }
    };
    void (async () => {
      try {
        const cols = Math.max(2, term.cols);
        const rows = Math.max(1, term.rows);
        // The session's terminal may already run in the core (this window left it, or another window opened it).
        const running = await sessionTerminal();
        let grant = running ? await api.call('terminalAttach', { terminalId: running.terminalId }).catch(() => null) : null;
        sent = grant && running ? { cols: running.cols, rows: running.rows } : { cols, rows };
        if (disposed) return;
        grant ??= await api.call('terminalOpen', { sandbox, session, cols, rows });
        // Unmounted while asking: nothing to undo — the shell stays in the core for the next view (one
        // that is never attached is ended by the server when its ticket expires).
        if (disposed) return;
        terminalId = grant.terminalId;
        onStartedRef.current?.(grant.cwd, grant.terminalId);
        const socket = new WebSocket(grant.url);
        socket.binaryType = 'arraybuffer';
        ws = socket;
        // AttachAddon sends on the socket right away; it throws while the socket is CONNECTING.
        socket.addEventListener('open', () => {
          if (disposed) return;
          term.loadAddon(new AttachAddon(socket));
          setLink({ state: 'open' });
          syncSize();
          // Take the focus, unless the person moved it to the tab bar meanwhile (arrow-key navigation there
          // must not be cut short by a shell that finished opening).
          if (active && !document.activeElement?.closest('[role="tablist"] .tab-label')) term.focus();
        });
        socket.addEventListener('close', (e) => {
          if (disposed) return;
          // The sandbox is being restored: the terminal comes back under its id; this view waits and reattaches.
          if (e.code === STREAM_CLOSE.restarting) {
            setLink({ state: 'restarting' });
            setGeneration((g) => g + 1);
            return;
          }
          const why = closeReason(e);
          term.write(`\r\n\x1b[2m[${why}]\x1b[0m\r\n`);
          setLink({ state: 'closed', why });
        });
      } catch (err) {
        if (disposed) return;
        const d = describeError(err);
        setLink({ state: 'failed', why: d.message, ...(d.hint ? { hint: d.hint } : {}) });
      }
    })();

    return () => {
      disposed = true;
      if (debounce) clearTimeout(debounce);
      observer?.disconnect();
      stopWatchingScheme();
      ws?.close();
      if (window.__sdeskTerminals?.[session] === term) delete window.__sdeskTerminals[session];
      termRef.current = null;
      term.dispose();
    };
    // `active` is read when the socket opens, not a reason to reconnect.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, sandbox, session, generation]);

  // A tab that becomes visible gets its real size (it had none while hidden) and the focus.
  useEffect(() => {
    if (!active || !termRef.current) return;
    const t = setTimeout(() => {
      termRef.current?.fit();
      termRef.current?.term.focus();
    }, 0);
    return () => clearTimeout(t);
  }, [active]);

  return (
    <div className="terminal-view">
      <div ref={host} className="terminal-host" data-testid={`terminal-${session}`} />
      {link.state === 'opening' && <div className="terminal-overlay muted">Opening a shell in {session}…</div>}
      {link.state === 'restarting' && (
        <div className="terminal-overlay muted" role="status" data-testid={`terminal-restarting-${session}`}>
          The sandbox is being restored: this terminal comes back when it is done…
        </div>
      )}
      {(link.state === 'closed' || link.state === 'failed') && (
        <div
          className={`terminal-banner ${link.state === 'failed' ? 'notice-error' : ''}`}
          role={link.state === 'failed' ? 'alert' : 'status'}
        >
          <span>
            {link.state === 'failed' ? 'Could not open the terminal: ' : 'Terminal closed: '}
            {link.why}
            {link.state === 'failed' && link.hint && <span className="hint"> {link.hint}</span>}
          </span>
          <button className="btn btn-small" onClick={() => setGeneration((g) => g + 1)}>
            Reconnect
          </button>
        </div>
      )}
    </div>
  );
}
