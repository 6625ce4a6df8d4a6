import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { CwdPath } from '../details/CwdPath.js';
import { TabOverflowMenu } from './TabOverflowMenu.js';
import type { SessionInfo, TerminalInfo } from '../../../src/api/contract.js';
import { useApi } from '../app/api-context.js';
import { Ago } from '../ui/Ago.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';
import { TerminalView } from './TerminalView.js';
import { warningLabel, warningTitle } from '../ui/warnings.js';

export interface TerminalTabs {
  tabs: string[];
  active: string | null;
}

interface Props {
  sandbox: string;
  visible: boolean;
  tabs: TerminalTabs;
  onAdd: (session?: string) => void;
  onClose: (session: string) => void;
  onActivate: (session: string) => void;
}

/**
 * Terminal tabs, one session each. The shells live in the core: switching tabs, selecting another
 * sandbox or reloading only detaches the views, and a view reattaches (with the core's scrollback);
 * closing a tab is the one way to end its shell. The sandbox's terminals the core has and this window
 * has no tab for (another window opened them, or this one before a reload) get tabs. Above the
 * terminal: the session's cwd record as the server keeps it (the shell's prompt reports every `cd`).
 */
export function TerminalPane({ sandbox, visible, tabs, onAdd, onClose, onActivate }: Props) {
  const api = useApi();
  const sessions = usePoll<SessionInfo[]>(() => api.call('listSessions', { sandbox }), 2000, sandbox, visible && tabs.tabs.length > 0, {
    live: touches.sessionsOf(sandbox),
  });
  // Which tabs' shells are their sessions' shells (the agent's commands in that session run and show there).
  const open = usePoll<TerminalInfo[]>(() => api.call('listTerminals', { sandbox }), 2000, sandbox, visible && tabs.tabs.length > 0);
  const attached = new Set((open.data ?? []).filter((t) => t.attached).map((t) => t.session));
  const [naming, setNaming] = useState<string | null>(null);
  const [startedIn, setStartedIn] = useState<Record<string, string>>({});
  const activeInfo = sessions.data?.find((s) => s.key === tabs.active);
  // Which core terminal each tab shows (its view says, once linked): what closing the tab ends.
  const terminalIds = useRef<Record<string, string>>({});
  const tabsRef = useRef(tabs);
  tabsRef.current = tabs;
  const callbacks = useRef({ onAdd, onActivate });
  callbacks.current = { onAdd, onActivate };

  // Tabs for the terminals the core keeps for this sandbox that this window does not show yet.
  useEffect(() => {
    let gone = false;
    api
      .call('listTerminals', { sandbox })
      .then((open) => {
        if (gone) return;
        const missing = [...new Set(open.map((t) => t.session))].filter((s) => !tabsRef.current.tabs.includes(s));
        if (!missing.length) return;
        const active = tabsRef.current.active;
        for (const s of missing) callbacks.current.onAdd(s);
        if (active) callbacks.current.onActivate(active);
      })
      .catch(() => undefined);
    return () => {
      gone = true;
    };
  }, [api, sandbox]);

  const close = (session: string) => {
    onClose(session);
    const known = terminalIds.current[session];
    delete terminalIds.current[session];
    // Not linked yet (still opening, or it failed): end whatever the core has for the session.
    const ids = known
      ? Promise.resolve([known])
      : api.call('listTerminals', { sandbox }).then((open) => open.filter((t) => t.session === session).map((t) => t.terminalId));
    void ids
      .then((list) => Promise.all(list.map((terminalId) => api.call('terminalClose', { terminalId }).catch(() => undefined))))
      .catch(() => undefined);
  };

  // Tabs pattern with manual activation: one tab stop; arrow keys / Home / End move the focus, Enter or
  // Space opens the tab (activating moves the focus into that terminal, which would end the navigation).
  const [focusedTab, setFocusedTab] = useState<string | null>(null);
  // Opening a tab (click, Enter, the menu) makes it the tab stop again.
  useEffect(() => setFocusedTab(null), [tabs.active]);
  const stop = focusedTab && tabs.tabs.includes(focusedTab) ? focusedTab : tabs.active;
  const onTabKey = (e: KeyboardEvent<HTMLElement>) => {
    const labels = [...e.currentTarget.querySelectorAll<HTMLElement>('.tab-label')];
    const at = labels.indexOf(document.activeElement as HTMLElement);
    const last = labels.length - 1;
    const to = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: last }[e.key];
    if (to === undefined || at < 0 || to < 0 || to > last) return;
    e.preventDefault();
    setFocusedTab(tabs.tabs[to] ?? null);
    labels[to]?.focus();
  };

  const submitName = (e: FormEvent) => {
    e.preventDefault();
    const name = naming?.trim();
    setNaming(null);
    if (name) onAdd(name);
  };

  return (
    <section className="pane terminal-pane" data-testid="terminal-pane" aria-label="Terminals">
      <header className="pane-head tabs" onKeyDown={onTabKey}>
        {/* The tablist holds only the tabs (axe: aria-required-children); each tab is its label button.
            The × is a pointer shortcut, hidden from assistive tech and the tab order (a control nested in
            a tab is unreachable there: axe nested-interactive); Delete on the focused tab closes it. */}
        <div className="tab-list" role="tablist" aria-label="Terminal sessions">
          {tabs.tabs.map((t) => (
            <div key={t} className={`tab${t === tabs.active ? ' tab-active' : ''}`} role="none">
              <button
                className="tab-label"
                role="tab"
                aria-selected={t === tabs.active}
                aria-keyshortcuts="Delete"
                aria-description="Delete closes this terminal (ends its shell)"
                data-testid={`terminal-tab-${t}`}
                tabIndex={t === stop ? 0 : -1}
                onClick={() => onActivate(t)}
                onKeyDown={(e) => e.key === 'Delete' && close(t)}
                title={attached.has(t) ? `session ${t} — attached: the agent's commands in this session run here` : `session ${t}`}
              >
                {t}
              </button>
              <button
                className="tab-close"
                data-testid={`terminal-close-${t}`}
                aria-hidden="true"
                tabIndex={-1}
                title={`Close ${t} (ends this shell; Delete on the tab)`}
                onClick={() => close(t)}
              >
                ×
              </button>
            </div>
          ))}
        </div>
        <TabOverflowMenu tabs={tabs.tabs} active={tabs.active} onActivate={onActivate} />
        <button
          className="btn-icon tab-add"
          data-testid="terminal-add"
          onClick={() => onAdd()}
          title="New terminal (Ctrl+Shift+T)"
          aria-label="New terminal"
        >
          +
        </button>
        {naming === null ? (
          <button
            className="link small"
            onClick={() => setNaming('')}
            title="Open a terminal in a session by name — e.g. an agent's session"
          >
            session…
          </button>
        ) : (
          <form onSubmit={submitName} className="tab-name-form">
            <input
              autoFocus
              className="input-small"
              value={naming}
              placeholder="session key"
              aria-label="Session key"
              onChange={(e) => setNaming(e.target.value)}
              onBlur={() => setNaming(null)}
              onKeyDown={(e) => e.key === 'Escape' && setNaming(null)}
              list={`sessions-${sandbox}`}
            />
            <datalist id={`sessions-${sandbox}`}>
              {sessions.data?.map((s) => (
                <option key={s.key} value={s.key} />
              ))}
            </datalist>
          </form>
        )}
      </header>

      {tabs.active && (
        <div className="cwd-bar" data-testid="terminal-cwd">
          {attached.has(tabs.active) ? (
            <span
              data-testid="terminal-attached"
              title="This terminal is the session's shell: the agent's commands in this session run here, in view; either of you may type"
            >
              <span className="badge badge-info">attached</span> <span className="muted">to session</span>{' '}
              <span className="mono">{tabs.active}</span>
            </span>
          ) : (
            <>
              <span className="muted">session</span> <span className="mono">{tabs.active}</span>
            </>
          )}
          <span className="sep" />
          <span className="muted">cwd record</span>{' '}
          {activeInfo?.cwd ? (
            <CwdPath path={activeInfo.cwd} testId="terminal-cwd-path" />
          ) : (
            <span className="muted">{startedIn[tabs.active] ? `started in ${startedIn[tabs.active]}` : 'none yet'}</span>
          )}
          {activeInfo?.observedAt && (
            <span className="muted small">
              {' '}
              · <Ago iso={activeInfo.observedAt} />
            </span>
          )}
          {activeInfo?.source && <span className="muted small"> · {activeInfo.source}</span>}
          {activeInfo?.lastWarnings.map((w, i) => (
            <span key={i} className={`badge ${warningLabel(w).bad ? 'badge-warn' : 'badge-info'}`} title={warningTitle(w)}>
              {warningLabel(w).label}
            </span>
          ))}
        </div>
      )}

      <div className="pane-body terminal-body">
        {tabs.tabs.length === 0 && (
          <div className="center muted empty">
            <p>No terminal open.</p>
            <p>
              <b>+</b> opens one (Ctrl+Shift+T); each tab is its own session with its own working directory.
            </p>
          </div>
        )}
        {tabs.tabs.map((t) => (
          <div key={t} className="terminal-slot" hidden={t !== tabs.active}>
            <TerminalView
              sandbox={sandbox}
              session={t}
              active={visible && t === tabs.active}
              onStarted={(cwd, terminalId) => {
                terminalIds.current[t] = terminalId;
                setStartedIn((m) => ({ ...m, [t]: cwd }));
              }}
            />
          </div>
        ))}
      </div>
    </section>
  );
}
