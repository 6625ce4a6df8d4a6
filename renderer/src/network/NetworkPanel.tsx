import { useState } from 'react';
import type { CallLogEntry, NetworkLogEntry, NetworkMode, NetworkPolicy } from '../../../src/api/contract.js';
import { NETWORK_MODES } from '../../../src/api/contract.js';
import { allowEntryProblem } from '../../../src/shared/network-policy.js';
import { filtersNetworkLog, matchesNetworkLog, type NetworkLogFilter } from '../../../src/shared/network-log-filter.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';
import { CALL_LOG_LIMIT } from '../details/CallLog.js';

/** How many of the newest connections the panel shows. */
export const NETWORK_LOG_LIMIT = 100;

interface Props {
  sandbox: string;
  /** Polling stops while another view is shown (until the event stream lands, the log is polled). */
  visible: boolean;
}

/**
 * The agent call that made a connection: the one the core linked it to (`callId`: by the process's
 * ancestry to the command's shell, see src/api/call-connections.ts); for a line whose process is not
 * known, the call whose time window holds it; none for a known process that was no call's command.
 */
export function callOf(calls: readonly CallLogEntry[], e: NetworkLogEntry): { call: CallLogEntry; by: 'link' | 'time' } | null {
  if (e.callId !== undefined) {
    const call = calls.find((c) => c.id === e.callId);
    return call ? { call, by: 'link' } : null;
  }
  if (e.process !== null) return null;
  const call = callAt(calls, e.at);
  return call ? { call, by: 'time' } : null;
}

/** The agent call whose time window holds a connection (best effort: same sandbox, by time). */
export function callAt(calls: readonly CallLogEntry[], at: string): CallLogEntry | null {
  const t = Date.parse(at);
  for (const c of calls) {
    const start = Date.parse(c.at);
    if (t >= start && t <= start + (c.durationMs ?? 0) + 250) return c;
  }
  return null;
}

/**
 * The sandbox's network: its policy (mode and allow list, changed here live) and the egress proxy's
 * connection log, newest first, with "Allow this host" on a denied line.
 */
export function NetworkPanel({ sandbox, visible }: Props) {
  const api = useApi();
  const policy = usePoll<NetworkPolicy>(() => api.call('sandboxNetwork', { name: sandbox }), 3000, sandbox, visible, {
    live: touches.networkOf(sandbox),
  });
  const log = usePoll<NetworkLogEntry[]>(() => api.call('networkLog', { sandbox, limit: NETWORK_LOG_LIMIT }), 1500, sandbox, visible, {
    live: touches.networkOf(sandbox),
  });
  // The same query as the calls table below, so both read one answer's worth of calls.
  const calls = usePoll<CallLogEntry[]>(() => api.call('callLog', { sandbox, limit: CALL_LOG_LIMIT }), 3000, sandbox, visible, {
    live: touches.callLogOf(sandbox),
  });
  const [entry, setEntry] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Denied only / by process / by host: the agent's one denied line findable among the rest.
  const [filter, setFilter] = useState<NetworkLogFilter>({});

  const change = async (p: { mode?: NetworkMode; allow?: string[]; deny?: string[] }): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await api.call('sandboxNetwork', { name: sandbox, ...p });
      await policy.refresh();
    } catch (err) {
      setError(describeError(err).message);
    } finally {
      setBusy(false);
    }
  };
  const problem = entry.trim() === '' ? null : allowEntryProblem(entry);
  const p = policy.data;
  const all = [...(log.data ?? [])].reverse();
  const filtering = filtersNetworkLog(filter);
  const newestFirst = filtering ? all.filter((e) => matchesNetworkLog(e, filter)) : all;

  return (
    <section className="card card-wide" data-testid="network">
      <div className="card-head">
        <h3>
          Network
          <span className="muted small"> — enforced outside the sandbox; every connection through the egress proxy</span>
        </h3>
        <span className="spacer" />
        <label className="small muted nowrap">
          Mode{' '}
          <select
            className="input-small"
            data-testid="network-mode"
            value={p?.mode ?? 'open'}
            disabled={!p || busy}
            onChange={(e) => void change({ mode: e.target.value as NetworkMode })}
          >
            {NETWORK_MODES.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
      </div>
      {p && (
        <div className="small" data-testid="network-allow">
          {p.mode === 'open' && <span className="muted">Open: this machine’s network, no proxy.</span>}
          {p.mode === 'offline' && <span className="muted">Offline: no route at all.</span>}
          {p.mode === 'allow' && (
            <>
              <span className="muted">Allowed: </span>
              {p.allow.length === 0 && <span className="muted">nothing yet</span>}
              {p.allow.map((a) => (
                <span key={a} className="badge" data-testid={`network-entry-${a}`}>
                  {a}{' '}
                  <button className="link" title={`Take ${a} off the list`} disabled={busy} onClick={() => void change({ deny: [a] })}>
                    ×
                  </button>
                </span>
              ))}
            </>
          )}
          <form
            className="inline-form"
            onSubmit={(e) => {
              e.preventDefault();
              if (problem || entry.trim() === '') return;
              void change({ allow: [entry.trim()] }).then(() => setEntry(''));
            }}
          >
            <input
              className="input-small"
              data-testid="network-add"
              placeholder="example.com:443, *.example.com, 10.0.0.0/8"
              value={entry}
              aria-invalid={problem ? 'true' : 'false'}
              onChange={(e) => setEntry(e.target.value)}
            />
            <button className="btn btn-small" type="submit" disabled={busy || !!problem || entry.trim() === ''}>
              Allow
            </button>
          </form>
          {problem && <div className="text-bad small">{problem}</div>}
        </div>
      )}
      {(error ?? policy.error?.message) && (
        <div className="notice notice-error" role="alert">
          {error ?? policy.error?.message}
        </div>
      )}
      {all.length > 0 && (
        <div className="inline-form small network-filter" data-testid="network-filter">
          <label className="nowrap">
            <input
              type="checkbox"
              data-testid="network-filter-denied"
              checked={filter.denied ?? false}
              onChange={(e) => setFilter({ ...filter, denied: e.target.checked })}
            />{' '}
            Denied only
          </label>
          <input
            className="input-small"
            aria-label="Filter by process"
            data-testid="network-filter-process"
            placeholder="process, e.g. curl"
            value={filter.process ?? ''}
            onChange={(e) => setFilter({ ...filter, process: e.target.value })}
          />
          <input
            className="input-small"
            aria-label="Filter by host"
            data-testid="network-filter-host"
            placeholder="host, e.g. github.com"
            value={filter.host ?? ''}
            onChange={(e) => setFilter({ ...filter, host: e.target.value })}
          />
          {filtering && (
            <span className="muted" data-testid="network-filter-count">
              {newestFirst.length} of {all.length}{' '}
              <button type="button" className="link" onClick={() => setFilter({})}>
                Clear
              </button>
            </span>
          )}
        </div>
      )}
      {log.data && all.length > 0 && newestFirst.length === 0 && (
        <div className="empty-inline muted" data-testid="network-filter-empty">
          No connection matches the filter.
        </div>
      )}
      {log.data && all.length === 0 && (
        <div className="empty-inline muted" data-testid="network-empty">
          No connections yet{p?.mode === 'allow' ? '' : ' (the log is of the egress proxy: mode allow)'}.
        </div>
      )}
      {newestFirst.length > 0 && (
        <div className="table-wrap">
          <table className="table" data-testid="network-log">
            <thead>
              <tr>
                <th>Time</th>
                <th>Verdict</th>
                <th>Host</th>
                <th className="num">Port</th>
                <th>Kind</th>
                <th>Why / call</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {newestFirst.map((e, i) => {
                const made = callOf(calls.data ?? [], e);
                const allowed = p?.allow.includes(e.host) || p?.allow.includes(`${e.host}:${e.port}`);
                return (
                  <tr key={`${e.at}-${i}`} data-testid="network-row" className={e.verdict === 'denied' ? 'text-bad' : ''}>
                    <td className="nowrap">{new Date(e.at).toLocaleTimeString()}</td>
                    <td>{e.verdict}</td>
                    <td>{e.host}</td>
                    <td className="num">{e.port}</td>
                    <td>{e.kind}</td>
                    <td className="small">
                      {/* The reason on a line of its own: beside the process it read as one sentence. */}
                      {e.reason && <div>{e.reason}</div>}
                      {(e.process || made) && (
                        <div>
                          {e.process && (
                            <span
                              className="mono"
                              data-testid="network-process"
                              title={e.ancestry ? `ancestry: ${e.ancestry.join(' ← ')}` : undefined}
                            >
                              {e.process}
                            </span>
                          )}
                          {made && (
                            <span
                              className="muted"
                              data-testid="network-call"
                              title={made.by === 'link' ? 'made by this call’s command' : 'during this call (the process is not known)'}
                            >
                              {e.process ? ' · ' : ''}
                              {made.by === 'link' ? `call #${made.call.id}` : '≈'} {made.call.tool}
                            </span>
                          )}
                        </div>
                      )}
                    </td>
                    <td>
                      {e.verdict === 'denied' && !allowed && (
                        <button
                          className="btn btn-small"
                          data-testid="network-allow-host"
                          disabled={busy}
                          title={`Add ${e.host}:${e.port} to the allow list (takes effect on the next connection)`}
                          onClick={() => void change({ allow: [`${e.host.includes(':') ? `[${e.host}]` : e.host}:${e.port}`] })}
                        >
                          Allow this host
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
