import { Terminal } from '@xterm/xterm';
import { useEffect, useRef, useState } from 'react';
import type { ReplayTerminalInfo } from '../../../src/shared/replay-types.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { currentColorScheme, TERMINAL_THEMES } from '../app/color-scheme.js';
import { CastFeeder, parseCast } from './cast.js';
import { replayCall } from './replay-api.js';

interface Props {
  sandbox: string;
  terminals: readonly ReplayTerminalInfo[];
  /** The terminal to show (a jump to a command picks its terminal). */
  selected: string | null;
  onSelect: (terminalId: string) => void;
  at: number;
}

/** The label of a recorded terminal in the picker. */
const labelOf = (t: ReplayTerminalInfo) =>
  `${t.session ?? 'terminal'} · ${t.terminalId.slice(0, 8)} · from ${new Date(t.startedAt).toLocaleTimeString()}`;

/**
 * A recorded terminal at time t: the same xterm.js the live terminal uses, fed the cast's output up
 * to t — only what is new when moving forward, everything again after a reset when seeking back.
 * Read-only: it has no stream, and keys do nothing.
 */
export function ReplayTerminal({ sandbox, terminals, selected, onSelect, at }: Props) {
  const api = useApi();
  const host = useRef<HTMLDivElement>(null);
  const term = useRef<Terminal | null>(null);
  const feeder = useRef<CastFeeder | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(0);
  const shown = terminals.find((t) => t.terminalId === selected) ?? terminals[0] ?? null;
  const atRef = useRef(at);
  atRef.current = at;

  // One xterm per terminal shown; its cast is read again when the recording grew (endedAt moved).
  useEffect(() => {
    const el = host.current;
    if (!el || !shown) return;
    let disposed = false;
    const t = new Terminal({
      fontFamily: '"JetBrains Mono", "DejaVu Sans Mono", "Cascadia Mono", Menlo, monospace',
      fontSize: 12,
      cols: shown.cols,
      rows: shown.rows,
      disableStdin: true,
      cursorBlink: false,
      scrollback: 5000,
      theme: TERMINAL_THEMES[currentColorScheme()],
    });
    t.open(el);
    term.current = t;
    (window.__sdeskTerminals ??= {})['replay'] = t;
    feeder.current = null;
    setError(null);
    replayCall(api, 'replayCast', { sandbox, terminalId: shown.terminalId }).then(
      ({ cast }) => {
        if (disposed) return;
        try {
          feeder.current = new CastFeeder(parseCast(cast, Date.parse(shown.startedAt)));
          setLoaded((n) => n + 1);
        } catch (err) {
          setError(err instanceof Error ? err.message : String(err));
        }
      },
      (err: unknown) => !disposed && setError(describeError(err).message),
    );
    return () => {
      disposed = true;
      if (window.__sdeskTerminals?.['replay'] === t) delete window.__sdeskTerminals['replay'];
      term.current = null;
      feeder.current = null;
      t.dispose();
    };
  }, [api, sandbox, shown?.terminalId, shown?.endedAt]); // eslint-disable-line react-hooks/exhaustive-deps

  useEffect(() => {
    const t = term.current;
    const f = feeder.current;
    if (!t || !f) return;
    const step = f.seek(at);
    if (step.reset) t.reset();
    if (step.size) t.resize(step.size.cols, step.size.rows);
    if (step.data) t.write(step.data);
  }, [at, loaded]);

  return (
    <section className="replay-terminal card" aria-label="Recorded terminal" data-testid="replay-terminal">
      <h3>
        Terminal
        {terminals.length > 1 && (
          <select
            className="input replay-terminal-pick"
            aria-label="Recorded terminal"
            data-testid="replay-terminal-pick"
            value={shown?.terminalId ?? ''}
            onChange={(e) => onSelect(e.currentTarget.value)}
          >
            {terminals.map((t) => (
              <option key={t.terminalId} value={t.terminalId}>
                {labelOf(t)}
              </option>
            ))}
          </select>
        )}
        {terminals.length === 1 && shown && <span className="muted small"> {labelOf(shown)}</span>}
      </h3>
      {!shown && <div className="muted empty-inline">No terminal was recorded for this sandbox.</div>}
      {error && (
        <div className="notice notice-error" role="alert">
          {error}
        </div>
      )}
      <div ref={host} className="replay-xterm" hidden={!shown} data-testid="replay-xterm" />
    </section>
  );
}
