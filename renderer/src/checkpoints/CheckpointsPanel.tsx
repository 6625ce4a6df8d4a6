import { byteSize } from '../../../src/shared/byte-size.js';
import { useState } from 'react';
import type { CheckpointInfo, SandboxInfo } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { Ago } from '../ui/Ago.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';

interface Props {
  sandbox: SandboxInfo;
  visible: boolean;
}

/** Sizes as the CLI prints them. */
export function bytes(n: number | null): string {
  return n === null ? '—' : byteSize(n);
}

type Asking =
  { kind: 'restore'; cp: CheckpointInfo } | { kind: 'fork'; cp: CheckpointInfo } | { kind: 'remove'; cp: CheckpointInfo } | null;

/**
 * The sandbox's checkpoints: label, when, size, with or without memory, the sessions whose directories
 * travel with it; broken ones (what the backend saved is gone) are marked with why and cannot be used.
 * Restore and fork ask first, saying what they will do.
 */
export function CheckpointsPanel({ sandbox: s, visible }: Props) {
  const api = useApi();
  const list = usePoll<CheckpointInfo[]>(() => api.call('listCheckpoints', { sandbox: s.name }), 5000, s.name, visible, {
    live: touches.checkpointsOf(s.name),
  });
  const [label, setLabel] = useState('');
  const [asking, setAsking] = useState<Asking>(null);
  const [forkName, setForkName] = useState('');
  const [forkCount, setForkCount] = useState('1');
  const [busy, setBusy] = useState(false);
  // The result belongs to the sandbox it was about: the panel stays mounted when the selection moves
  // (to the fork, say), and "Forked X" must not follow onto X's own panel.
  const [result, setResult] = useState<{ text: string; bad: boolean; sandbox: string } | null>(null);

  async function run(what: string, fn: () => Promise<string>) {
    setBusy(true);
    setResult(null);
    try {
      setResult({ text: await fn(), bad: false, sandbox: s.name });
      setAsking(null);
    } catch (err) {
      const e = describeError(err);
      setResult({ text: `${what}: ${e.message}${e.hint ? ` — ${e.hint}` : ''}`, bad: true, sandbox: s.name });
    } finally {
      setBusy(false);
      void list.refresh();
    }
  }

  const take = () =>
    run('Checkpoint', async () => {
      const r = await api.call('checkpointSandbox', { sandbox: s.name, ...(label.trim() ? { label: label.trim() } : {}) });
      setLabel('');
      return `Checkpoint ${r.checkpoint.id} saved.`;
    });

  return (
    <section className="card card-wide" data-testid="checkpoints-panel">
      <h3>
        Checkpoints
        <span className="muted small"> — the disk and every session's working directory, to go back to or branch from</span>
      </h3>
      <form
        className="checkpoint-take"
        onSubmit={(e) => {
          e.preventDefault();
          void take();
        }}
      >
        <input
          aria-label="Checkpoint label"
          placeholder="label (optional), e.g. before the agent"
          value={label}
          maxLength={200}
          onChange={(e) => setLabel(e.target.value)}
        />
        <button className="btn btn-small" type="submit" data-testid="checkpoint-take" disabled={busy}>
          {busy && asking === null ? 'Saving…' : 'Take a checkpoint'}
        </button>
      </form>
      {result && result.sandbox === s.name && (
        <div
          className={`notice ${result.bad ? 'notice-error' : 'notice-ok'}`}
          role={result.bad ? 'alert' : 'status'}
          data-testid="checkpoint-result"
        >
          {result.text}
        </div>
      )}
      {list.error && (
        <div className="notice notice-error" role="alert">
          {list.error.message}
        </div>
      )}
      {list.data && list.data.length === 0 && <div className="empty-inline muted">No checkpoints of {s.name} yet.</div>}
      {list.data && list.data.length > 0 && (
        <div className="table-wrap">
          <table className="table" data-testid="checkpoint-table">
            <thead>
              <tr>
                <th>Label</th>
                <th>Taken</th>
                <th>Size</th>
                <th>Memory</th>
                <th>Sessions</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.data.map((c) => (
                <tr key={c.id} data-testid={`checkpoint-row-${c.id}`} className={c.broken ? 'checkpoint-broken' : ''}>
                  <td>
                    {c.label ?? <span className="muted">no label</span>} <span className="muted mono small">{c.id}</span>
                    {c.broken && (
                      <span className="badge badge-bad" title={c.brokenDetail ?? ''} data-testid={`checkpoint-broken-${c.id}`}>
                        broken: {c.brokenDetail}
                      </span>
                    )}
                  </td>
                  <td title={new Date(c.createdAt).toLocaleString()}>
                    <Ago iso={c.createdAt} />
                  </td>
                  <td>{bytes(c.sizeBytes)}</td>
                  <td>{c.memory ? 'with memory' : 'disk only'}</td>
                  <td className="mono small">{c.sessions.map((x) => `${x.key}: ${x.cwd ?? 'default'}`).join(', ') || '—'}</td>
                  <td className="row-actions">
                    <button
                      className="btn btn-small"
                      disabled={busy || c.broken}
                      data-testid={`checkpoint-restore-${c.id}`}
                      onClick={() => setAsking({ kind: 'restore', cp: c })}
                    >
                      Restore
                    </button>
                    <button
                      className="btn btn-small"
                      disabled={busy || c.broken}
                      data-testid={`checkpoint-fork-${c.id}`}
                      onClick={() => {
                        setForkName(`${s.name}-fork`);
                        setForkCount('1');
                        setAsking({ kind: 'fork', cp: c });
                      }}
                    >
                      Fork
                    </button>
                    <button
                      className="btn btn-small btn-danger-quiet"
                      disabled={busy}
                      data-testid={`checkpoint-rm-${c.id}`}
                      onClick={() => setAsking({ kind: 'remove', cp: c })}
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {asking?.kind === 'restore' && (
        <div className="confirm checkpoint-confirm" role="alertdialog" aria-label={`Restore ${s.name}`}>
          <span>
            Restore <b>{s.name}</b> to <b>{asking.cp.label ?? asking.cp.id}</b> (<Ago iso={asking.cp.createdAt} />
            )? Everything changed since is lost, and each session goes back to the directory it had then. What runs now starts again on the
            restored disk: the desktop if it is running, the sessions' shells, and the open terminals, in their tabs.
          </span>
          <button
            className="btn btn-danger"
            data-testid="confirm-restore"
            disabled={busy}
            onClick={() =>
              void run('Restore', async () => {
                const r = await api.call('restoreSandbox', { sandbox: s.name, checkpoint: asking.cp.id });
                return `Restored ${s.name}; ${r.sessions.length} session${r.sessions.length === 1 ? '' : 's'} re-measured${r.warnings.length ? ` (${r.warnings.map((w) => w.message).join('; ')})` : ''}.`;
              })
            }
          >
            {busy ? 'Restoring…' : 'Restore'}
          </button>
          <button className="btn" disabled={busy} onClick={() => setAsking(null)}>
            Cancel
          </button>
        </div>
      )}
      {asking?.kind === 'fork' && (
        <div className="confirm checkpoint-confirm" role="alertdialog" aria-label={`Fork ${s.name}`}>
          <span>
            New sandboxes from <b>{asking.cp.label ?? asking.cp.id}</b>, each independent, with {s.name}'s options and sessions
            {Number(forkCount) > 1 ? `: ${forkName}-1 … ${forkName}-${forkCount}` : `: ${forkName}`}. What runs in {s.name} now starts in
            each fork too: the desktop if it is running, and the sessions' shells; its terminals stay with {s.name}.
          </span>
          <label>
            Name <input aria-label="Fork name" value={forkName} onChange={(e) => setForkName(e.target.value)} />
          </label>
          <label>
            Count{' '}
            <input
              aria-label="Fork count"
              type="number"
              min={1}
              max={20}
              value={forkCount}
              onChange={(e) => setForkCount(e.target.value)}
            />
          </label>
          <button
            className="btn btn-primary"
            data-testid="confirm-fork"
            disabled={busy || !forkName}
            onClick={() =>
              void run('Fork', async () => {
                const n = Number(forkCount);
                const r = await api.call('forkSandbox', {
                  sandbox: s.name,
                  checkpoint: asking.cp.id,
                  as: forkName,
                  ...(n === 1 ? {} : { count: n }),
                });
                return `Forked ${r.sandboxes.map((x) => x.name).join(', ')}.`;
              })
            }
          >
            {busy ? 'Forking…' : 'Fork'}
          </button>
          <button className="btn" disabled={busy} onClick={() => setAsking(null)}>
            Cancel
          </button>
        </div>
      )}
      {asking?.kind === 'remove' && (
        <div className="confirm checkpoint-confirm" role="alertdialog" aria-label={`Remove checkpoint ${asking.cp.id}`}>
          <span>
            Remove checkpoint <b>{asking.cp.label ?? asking.cp.id}</b> and what the backend saved for it? Sandboxes forked from it keep
            running.
          </span>
          <button
            className="btn btn-danger"
            data-testid="confirm-checkpoint-rm"
            disabled={busy}
            onClick={() =>
              void run('Remove', async () => {
                await api.call('removeCheckpoint', { id: asking.cp.id });
                return `Removed checkpoint ${asking.cp.id}.`;
              })
            }
          >
            Remove
          </button>
          <button className="btn" disabled={busy} onClick={() => setAsking(null)}>
            Cancel
          </button>
        </div>
      )}
    </section>
  );
}
