import { useEffect, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { readableAppLog } from './app-log-format.js';
import type { LogSourceInfo } from '../../../src/api/contract.js';
import { useApi } from '../app/api-context.js';
import { describeError } from '../app/api-client.js';
import { appendBounded, findMatches, segments, stepMatch } from './log-buffer.js';

const TAIL = 500;

interface Props {
  sandbox: string;
  /** Nothing is fetched or followed while another view is shown. */
  visible: boolean;
  /** The source to show first, when it exists (a link from elsewhere, e.g. the desktop's crash notice). */
  initialSource?: string | undefined;
}

type FollowState = { kind: 'idle' } | { kind: 'connecting' } | { kind: 'live' } | { kind: 'ended'; reason: string };

/**
 * One sandbox's logs: a source picker (every source the core knows, those that do not exist disabled
 * with the reason), the last lines, following over a ticketed WebSocket, search with highlights and
 * next/previous, and copy. What is kept is bounded (log-buffer.ts).
 */
export function LogsView({ sandbox, visible, initialSource }: Props) {
  const api = useApi();
  const [sources, setSources] = useState<LogSourceInfo[] | null>(null);
  const [source, setSource] = useState<string | null>(initialSource ?? null);
  const [text, setText] = useState('');
  const [dropped, setDropped] = useState(false);
  const [follow, setFollow] = useState(true);
  const [state, setState] = useState<FollowState>({ kind: 'idle' });
  const [error, setError] = useState<{ message: string; hint?: string } | null>(null);
  const [query, setQuery] = useState('');
  const [current, setCurrent] = useState(-1);
  const [copied, setCopied] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  const pre = useRef<HTMLPreElement>(null);
  const stick = useRef(true);

  // The sources, once per sandbox (and on demand): the first that exists is picked.
  useEffect(() => {
    if (!visible) return;
    let live = true;
    setError(null);
    api.call('logSources', { sandbox }).then(
      (list) => {
        if (!live) return;
        setSources(list);
        setSource((s) =>
          s && list.some((x) => x.id === s && x.exists)
            ? s
            : ((list.find((x) => x.exists && x.kind === 'backend') ?? list.find((x) => x.exists))?.id ?? null),
        );
      },
      (err: unknown) => live && setError(describeError(err)),
    );
    return () => {
      live = false;
    };
  }, [api, sandbox, visible, reload]);

  // The text: followed over a WebSocket, or read once.
  useEffect(() => {
    if (!visible || !source) return;
    let live = true;
    let ws: WebSocket | null = null;
    setText('');
    setDropped(false);
    setError(null);
    setCurrent(-1);
    stick.current = true;
    if (!follow) {
      setState({ kind: 'idle' });
      api.call('readLog', { sandbox, source, tail: TAIL }).then(
        (r) => live && setText(r.text),
        (err: unknown) => live && setError(describeError(err)),
      );
    } else {
      setState({ kind: 'connecting' });
      api.call('logTicket', { sandbox, source, tail: TAIL }).then(
        (grant) => {
          if (!live) return;
          ws = new WebSocket(grant.url);
          ws.onopen = () => live && setState({ kind: 'live' });
          ws.onmessage = (e: MessageEvent) => {
            if (!live || typeof e.data !== 'string') return;
            const chunk = e.data;
            setText((t) => {
              const r = appendBounded(t, chunk);
              if (r.dropped) setDropped(true);
              return r.text;
            });
          };
          ws.onclose = (e: CloseEvent) => live && setState({ kind: 'ended', reason: e.reason || `closed (${e.code})` });
        },
        (err: unknown) => {
          if (!live) return;
          setState({ kind: 'idle' });
          setError(describeError(err));
        },
      );
    }
    return () => {
      live = false;
      ws?.close();
    };
  }, [api, sandbox, source, follow, visible, reload]);

  // The app's own log is JSON lines: shown (and searched, copied) as time, level, message, fields.
  const shown = useMemo(() => (source === 'app' ? readableAppLog(text) : text), [source, text]);
  const matches = useMemo(() => findMatches(shown, query), [shown, query]);
  const parts = useMemo(() => segments(shown, matches), [shown, matches]);

  // New text keeps the view at the bottom while the reader is there (scrolling up stops that).
  useLayoutEffect(() => {
    const el = pre.current;
    if (el && stick.current && current < 0) el.scrollTop = el.scrollHeight;
  }, [text, current]);

  useEffect(() => {
    if (current < 0) return;
    pre.current?.querySelector('[data-current="true"]')?.scrollIntoView?.({ block: 'center' });
  }, [current, query]);

  const go = (dir: 1 | -1) => setCurrent((c) => stepMatch(Math.min(c, matches.length - 1), matches.length, dir));
  const onSearchKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      go(e.shiftKey ? -1 : 1);
    } else if (e.key === 'Escape') {
      setQuery('');
      setCurrent(-1);
    }
  };

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(shown);
      setCopied(`Copied ${shown ? shown.split('\n').filter(Boolean).length : 0} lines`);
    } catch (err) {
      setCopied(`Could not copy: ${describeError(err).message}`);
    }
    setTimeout(() => setCopied(null), 2500);
  };

  const chosen = sources?.find((s) => s.id === source) ?? null;
  const shownCurrent = current >= matches.length ? -1 : current;

  return (
    <div className="logs" data-testid="logs-view">
      <div className="logs-bar">
        <label className="logs-field">
          <span className="muted small">Source</span>
          <select
            data-testid="logs-source"
            value={source ?? ''}
            onChange={(e) => setSource(e.target.value || null)}
            disabled={!sources}
            aria-label="Log source"
          >
            {!source && <option value="">{sources ? 'no log exists yet' : 'loading…'}</option>}
            {sources?.map((s) => (
              <option key={s.id} value={s.id} disabled={!s.exists} title={s.detail ?? undefined}>
                {s.label}
                {s.exists ? '' : ' (not there)'}
              </option>
            ))}
          </select>
        </label>
        <label className="logs-field">
          <input type="checkbox" data-testid="logs-follow" checked={follow} onChange={(e) => setFollow(e.target.checked)} />
          <span>Follow</span>
        </label>
        <span
          className={`pill logs-state logs-state-${state.kind}`}
          data-testid="logs-state"
          title={state.kind === 'ended' ? state.reason : undefined}
        >
          {state.kind === 'live'
            ? 'following'
            : state.kind === 'connecting'
              ? 'connecting…'
              : state.kind === 'ended'
                ? 'ended'
                : 'snapshot'}
        </span>
        <span className="spacer" />
        <div className="logs-search" role="search">
          <input
            type="search"
            placeholder="Search"
            aria-label="Search the log"
            data-testid="logs-search"
            value={query}
            onChange={(e) => {
              setQuery(e.target.value);
              setCurrent(-1);
            }}
            onKeyDown={onSearchKey}
          />
          <span className="muted small" data-testid="logs-matches" aria-live="polite">
            {query ? `${shownCurrent >= 0 ? shownCurrent + 1 : 0}/${matches.length}` : ''}
          </span>
          <button
            className="btn btn-small"
            aria-label="Previous match"
            data-testid="logs-prev"
            disabled={!matches.length}
            onClick={() => go(-1)}
          >
            ↑
          </button>
          <button
            className="btn btn-small"
            aria-label="Next match"
            data-testid="logs-next"
            disabled={!matches.length}
            onClick={() => go(1)}
          >
            ↓
          </button>
        </div>
        <button className="btn btn-small" data-testid="logs-copy" onClick={() => void copy()} disabled={!text}>
          Copy
        </button>
        <button className="btn btn-small" data-testid="logs-reload" onClick={() => setReload((n) => n + 1)}>
          Reload
        </button>
      </div>
      {error && (
        <div className="notice notice-error" role="alert" data-testid="logs-error">
          {error.message}
          {error.hint && <div className="hint">{error.hint}</div>}
        </div>
      )}
      {(copied || dropped || chosen?.detail) && (
        <div className="muted small logs-info">
          {copied && <span data-testid="logs-copied">{copied} · </span>}
          {dropped && <span>older lines dropped (the view keeps the newest 512 KiB) · </span>}
          {chosen?.detail && <span className="mono">{chosen.detail}</span>}
        </div>
      )}
      <pre
        className="logs-text mono"
        ref={pre}
        data-testid="logs-text"
        tabIndex={0}
        aria-label={`Log ${chosen?.label ?? ''}`}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {parts.map((p, i) =>
          p.match === null ? (
            p.text
          ) : (
            <mark
              key={i}
              className={p.match === shownCurrent ? 'hit hit-current' : 'hit'}
              data-current={p.match === shownCurrent ? 'true' : undefined}
            >
              {p.text}
            </mark>
          ),
        )}
        {!text && !error && (
          <span className="muted">{source ? (state.kind === 'connecting' ? 'Connecting…' : 'Nothing logged yet.') : ''}</span>
        )}
      </pre>
    </div>
  );
}
