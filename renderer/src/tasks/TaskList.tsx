import { useEffect, useRef, useState } from 'react';
import type { OperationView } from '../../../src/api/contract.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { useEvents, useEventsStatus, usePageHidden } from '../events/events-context.js';
import { askNotificationPermission, endedText, operationTitle, systemNotify } from '../events/notify.js';
import { Ago } from '../ui/Ago.js';

interface Props {
  /** Whether the window has focus (injected in tests; default `document.hasFocus()`). */
  focused?: () => boolean;
  notify?: (title: string, body: string) => void;
}

/**
 * The long operations of every process on this data directory (create, boot, desktop start, image
 * build, checkpoint… any kind), with their progress: read once, then kept from `operation` events.
 * One that ends while the window is not focused raises a system notification.
 */
export function TaskList({ focused = () => document.hasFocus(), notify = systemNotify }: Props) {
  const api = useApi();
  const events = useEvents();
  const status = useEventsStatus();
  const hidden = usePageHidden();
  const [ops, setOps] = useState<OperationView[]>([]);
  const [open, setOpen] = useState(false);
  // A cancel asked from here, per task: its refusal (the core's words) shown on the task.
  const [cancelling, setCancelling] = useState<Record<string, string | null>>({});
  const seen = useRef(new Map<string, OperationView['state']>());
  const toggle = useRef<HTMLButtonElement>(null);
  const panel = useRef<HTMLElement>(null);

  // A popover, not a sheet over the window: Escape or a click outside closes it, and the keyboard
  // goes back to the Tasks button (closing it left focus on <body>, and an open list covered other tabs).
  useEffect(() => {
    if (!open) return;
    const close = () => {
      setOpen(false);
      toggle.current?.focus();
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') close();
    };
    const onDown = (e: MouseEvent) => {
      const t = e.target as Node | null;
      if (t && !panel.current?.contains(t) && !toggle.current?.contains(t)) setOpen(false);
    };
    document.addEventListener('keydown', onKey);
    document.addEventListener('mousedown', onDown);
    return () => {
      document.removeEventListener('keydown', onKey);
      document.removeEventListener('mousedown', onDown);
    };
  }, [open]);
  const latest = useRef({ focused, notify });
  latest.current = { focused, notify };

  // Read the list when the stream goes live (and after a resync); while cut, every 3 s; hidden, never.
  useEffect(() => {
    if (hidden) return;
    let stop = false;
    const load = () =>
      api.call('listOperations', { limit: 30 }).then(
        (list) => {
          if (stop) return;
          for (const o of list) if (!seen.current.has(o.id)) seen.current.set(o.id, o.state);
          setOps(list);
        },
        () => undefined,
      );
    void load();
    const poll = status === 'live' ? null : setInterval(() => void load(), 3000);
    const offResync = events?.onResync(() => void load());
    return () => {
      stop = true;
      if (poll) clearInterval(poll);
      offResync?.();
    };
  }, [api, events, status, hidden]);

  useEffect(() => {
    if (!events) return;
    return events.onEvent((e) => {
      if (e.topic !== 'operation') return;
      const op = e.operation;
      const before = seen.current.get(op.id);
      seen.current.set(op.id, op.state);
      setOps((list) => [op, ...list.filter((o) => o.id !== op.id)].sort((a, b) => b.startedAt.localeCompare(a.startedAt)).slice(0, 30));
      if (op.state !== 'running' && before !== op.state && !latest.current.focused()) {
        const { title, body } = endedText(op);
        latest.current.notify(title, body);
      }
    });
  }, [events]);

  const running = ops.filter((o) => o.state === 'running');
  // A failure stays on the button until the list has been open: a closed list must not hide that something failed.
  const [readFailures, setReadFailures] = useState<ReadonlySet<string>>(new Set());
  const failedIds = ops.filter((o) => o.state === 'failed').map((o) => o.id);
  const unread = failedIds.filter((id) => !readFailures.has(id)).length;
  const failedKey = failedIds.join(' ');
  useEffect(() => {
    if (open) setReadFailures((prev) => (failedKey.split(' ').every((id) => !id || prev.has(id)) ? prev : new Set(failedKey.split(' '))));
  }, [open, failedKey]);
  const label = [running.length ? `${running.length} running` : '', unread ? `${unread} failed` : ''].filter(Boolean).join(', ');
  return (
    <>
      <button
        className={`btn btn-small${unread ? ' tasks-failed' : ''}`}
        data-testid="tasks-toggle"
        ref={toggle}
        aria-expanded={open}
        onClick={() => {
          askNotificationPermission();
          setOpen((v) => !v);
        }}
      >
        {running.length ? <span className="spinner spinner-small" aria-hidden="true" /> : null}
        Tasks{label ? ` (${label})` : ''}
      </button>
      {open && (
        <section className="task-list" data-testid="task-list" aria-label="Tasks" ref={panel}>
          <header className="op-head">
            <strong>Tasks</strong>
            <span className="muted small">long operations of this window, the CLI and agents</span>
            <button
              className="btn-icon"
              aria-label="Close tasks"
              onClick={() => {
                setOpen(false);
                toggle.current?.focus();
              }}
            >
              ×
            </button>
          </header>
          {ops.length === 0 && <p className="muted small">No long operations yet.</p>}
          <ul className="task-items">
            {ops.map((o) => (
              <li key={o.id} className={`task task-${o.state}`} data-testid={`task-${o.id}`} data-state={o.state}>
                <div className="task-head">
                  <span className="task-title">{operationTitle(o)}</span>
                  <span className="muted small">
                    {o.state === 'running' ? 'running' : o.state} · <Ago iso={o.startedAt} />
                  </span>
                </div>
                {o.state === 'running' && (
                  <progress
                    className="task-bar"
                    aria-label={`${operationTitle(o)} progress`}
                    {...(o.fraction !== null ? { value: o.fraction, max: 1 } : {})}
                  />
                )}
                <div className={`small mono ${o.state === 'failed' ? 'text-bad' : 'muted'}`}>{detail(o)}</div>
                {/* A create or start sent to the background (a VM's boot) is cancelled from here: the core
                    undoes what it made. Other kinds have no cancel in the contract. */}
                {o.state === 'running' && o.sandbox && CANCELLABLE.has(o.kind) && (
                  <div className="task-actions">
                    <button
                      type="button"
                      className="btn btn-small"
                      data-testid={`task-cancel-${o.id}`}
                      disabled={o.id in cancelling && cancelling[o.id] === null}
                      onClick={() => {
                        setCancelling((c) => ({ ...c, [o.id]: null }));
                        api.call('cancelOperation', { name: o.sandbox! }).then(
                          () => undefined,
                          (err: unknown) => {
                            const e = describeError(err);
                            setCancelling((c) => ({ ...c, [o.id]: `${e.message}${e.hint ? ` — ${e.hint}` : ''}` }));
                          },
                        );
                      }}
                    >
                      {o.id in cancelling && cancelling[o.id] === null ? 'Cancelling…' : 'Cancel'}
                    </button>
                    {cancelling[o.id] && (
                      <span className="small text-bad" role="alert">
                        {cancelling[o.id]}
                      </span>
                    )}
                  </div>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}
    </>
  );
}

/** The kinds `cancelOperation` stops (a sandbox's create or start, by the sandbox's name). */
const CANCELLABLE = new Set(['create', 'start']);

/** The line under a task: its latest step while it runs, how long it took once done, why it failed. */
function detail(o: OperationView): string {
  if (o.state === 'running') return o.message ?? 'starting…';
  if (o.error) return o.error;
  const s = (Date.parse(o.updatedAt) - Date.parse(o.startedAt)) / 1000;
  return Number.isFinite(s) ? `${o.state === 'succeeded' ? 'done' : o.state} in ${s < 10 ? s.toFixed(1) : Math.round(s)} s` : o.state;
}
