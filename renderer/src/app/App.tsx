import { lazy, Suspense, useCallback, useEffect, useRef, useState, type KeyboardEvent } from 'react';
import type { ApiClient, CreateSandboxResult, SandboxInfo } from '../../../src/api/contract.js';
import { ApiProvider, useApi } from './api-context.js';
import { DESKTOP_IMAGE } from '../../../src/shared/desktop-types.js';
import { CreateSandboxDialog } from '../sandboxes/CreateSandboxDialog.js';
import { ImagesView } from '../images/ImagesView.js';
import { LogsView } from '../logs/LogsView.js';
import { EngineStatus } from './EngineStatus.js';
import { EmptyState, type QuickKind } from '../ui/EmptyState.js';
import { describeError } from './api-client.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';
import { SandboxActions } from '../sandboxes/SandboxActions.js';
import { CheckpointActions } from '../checkpoints/CheckpointActions.js';
import { SandboxDetails } from '../details/SandboxDetails.js';
import { OperationProgress } from '../tasks/OperationProgress.js';
import { SandboxList, StateBadge } from '../sandboxes/SandboxList.js';
import { createdNotice } from '../sandboxes/create-notice.js';
import { shortcutsFor, useShortcuts } from './shortcuts.js';
import type { TerminalTabs } from '../workspace/TerminalPane.js';
import type { EventsClient } from '../events/events-client.js';
import { EventsProvider } from '../events/events-context.js';
import { ConnectionBanner } from './ConnectionBanner.js';
import { TaskList } from '../tasks/TaskList.js';

// The workspace pulls in noVNC and xterm (most of the bundle, and noVNC's top-level await): loaded
// when first opened, so the list and details show at once.
const Workspace = lazy(() => import('../workspace/Workspace.js').then((m) => ({ default: m.Workspace })));
// The replay view has its own xterm: loaded when first opened, like the workspace.
const ReplayView = lazy(() => import('../replay/ReplayView.js').then((m) => ({ default: m.ReplayView })));

type View = 'details' | 'workspace' | 'logs' | 'replay';
const VIEWS: View[] = ['details', 'workspace', 'logs', 'replay'];

/** `events`: the core's pushed state (main.tsx makes it); without it every panel polls, as in tests. */
export function App({ api, events = null }: { api: ApiClient; events?: EventsClient | null }) {
  return (
    <ApiProvider api={api}>
      <EventsProvider events={events}>
        <Desk />
      </EventsProvider>
    </ApiProvider>
  );
}

/** The first free term-N: tabs closed in the middle leave gaps that are reused. */
function nextTerminalName(tabs: string[]): string {
  for (let i = 1; ; i++) if (!tabs.includes(`term-${i}`)) return `term-${i}`;
}

function Desk() {
  const api = useApi();
  const list = usePoll<SandboxInfo[]>(() => api.call('listSandboxes', {}), 2000, 'sandboxes', true, { live: touches.sandboxList });
  // The warm pools: the sidebar shows them, a create's notice says warm or cold by them.
  const pools = usePoll(() => api.call('poolList', {}), 5000, 'pools', true, { live: touches.pools });
  const [selected, setSelected] = useState<string | null>(null);
  const [view, setView] = useState<View>('details');
  // The Logs view's first source when opened from a link (the desktop's crash notice); else its own pick.
  const [logsSource, setLogsSource] = useState<string | undefined>(undefined);
  const [creating, setCreating] = useState(false);
  const [imagesOpen, setImagesOpen] = useState(false);
  // The image the create dialog opens with ("Create a desktop sandbox" prefills the desktop image).
  const [createImage, setCreateImage] = useState<string | undefined>(undefined);
  // The workspace stays mounted (hidden) while the details are shown, so shells and the screen survive the switch.
  const [workspaceFor, setWorkspaceFor] = useState<string | null>(null);
  const [terminals, setTerminals] = useState<Record<string, TerminalTabs>>({});
  // A notice belongs to one sandbox ("Created X, with warnings…") and shows only above it; null: the whole app.
  const [notice, setNotice] = useState<{ text: string; bad: boolean; sandbox: string | null } | null>(null);
  // Operations the user sent to the background ("name@startedAt"): their panel stays hidden, the row shows progress.
  const [backgrounded, setBackgrounded] = useState<ReadonlySet<string>>(new Set());
  const [quick, setQuick] = useState<{ busy: QuickKind | null; error: { message: string; hint?: string } | null }>({
    busy: null,
    error: null,
  });
  const browser = !window.sandboxDesk;
  const shortcuts = shortcutsFor(browser);

  const sandboxes = list.data;
  const current = sandboxes?.find((s) => s.name === selected) ?? null;
  // A sandbox just created is selected before the next list poll has it: until then the selection holds.
  const wanted = useRef<string | null>(null);

  // Keep a selection: the first sandbox when none (or the selected one went away).
  useEffect(() => {
    if (!sandboxes) return;
    if (wanted.current && sandboxes.some((s) => s.name === wanted.current)) wanted.current = null;
    if (selected && selected === wanted.current) return;
    if (!selected || !sandboxes.some((s) => s.name === selected)) setSelected(sandboxes[0]?.name ?? null);
  }, [sandboxes, selected]);

  const selectNew = (name: string) => {
    wanted.current = name;
    setSelected(name);
    setView('details');
  };
  const opKey = (s: SandboxInfo) => (s.operation ? `${s.name}@${s.operation.startedAt}` : '');
  const toBackground = (s: SandboxInfo) => setBackgrounded((b) => new Set(b).add(opKey(s)));
  const panelFor = (s: SandboxInfo | null | undefined) => (s?.operation && !backgrounded.has(opKey(s)) ? s : null);
  // While the (modal) create dialog waits, the create's progress and Cancel float above it.
  const creatingNow = creating ? panelFor(sandboxes?.find((s) => s.operation?.kind === 'create')) : null;

  useEffect(() => {
    if (view === 'workspace' && selected) setWorkspaceFor(selected);
  }, [view, selected]);

  // A running sandbox opened in the workspace for the first time gets one terminal.
  useEffect(() => {
    if (view !== 'workspace' || !current || current.state !== 'running' || terminals[current.name]) return;
    setTerminals((m) => ({ ...m, [current.name]: { tabs: ['term-1'], active: 'term-1' } }));
  }, [view, current, terminals]);

  const select = (name: string) => {
    setSelected(name);
    if (view !== 'workspace') setWorkspaceFor(null);
  };

  const addTab = useCallback((sandbox: string, session?: string) => {
    setTerminals((m) => {
      const t = m[sandbox] ?? { tabs: [], active: null };
      const name = session ?? nextTerminalName(t.tabs);
      return { ...m, [sandbox]: { tabs: t.tabs.includes(name) ? t.tabs : [...t.tabs, name], active: name } };
    });
    setView('workspace');
  }, []);

  const closeTab = (sandbox: string, session: string) =>
    setTerminals((m) => {
      const t = m[sandbox];
      if (!t) return m;
      const at = t.tabs.indexOf(session);
      const tabs = t.tabs.filter((x) => x !== session);
      const active = t.active === session ? (tabs[Math.min(at, tabs.length - 1)] ?? null) : t.active;
      return { ...m, [sandbox]: { tabs, active } };
    });

  const activateTab = (sandbox: string, session: string) =>
    setTerminals((m) => ({ ...m, [sandbox]: { ...(m[sandbox] ?? { tabs: [session] }), active: session } }));

  const onCreated = (r: CreateSandboxResult) => {
    setCreating(false);
    selectNew(r.sandbox.name);
    setNotice({ ...createdNotice(r, (pools.data?.pools.length ?? 0) > 0), sandbox: r.sandbox.name });
    void list.refresh();
    void pools.refresh();
  };

  // The empty state's two one-click creates: a Docker sandbox with the desktop image, or the terminal-only one.
  const quickCreate = async (kind: QuickKind) => {
    const taken = new Set((sandboxes ?? []).map((s) => s.name));
    let n = 1;
    while (taken.has(`${kind}-${n}`)) n++;
    const name = `${kind}-${n}`;
    setQuick({ busy: kind, error: null });
    wanted.current = name;
    setSelected(name);
    try {
      const image = kind === 'desktop' ? 'sandbox-desk/desktop:latest' : 'sandbox-desk/base:latest';
      onCreated(await api.call('createSandbox', { name, backend: 'docker', image }));
      setQuick({ busy: null, error: null });
    } catch (err) {
      wanted.current = null;
      setQuick({ busy: null, error: describeError(err) });
      void list.refresh();
    }
  };

  const onRemoved = (name: string) => {
    setNotice({ text: `Removed ${name}.`, bad: false, sandbox: null });
    setTerminals(({ [name]: _gone, ...rest }) => rest);
    if (workspaceFor === name) setWorkspaceFor(null);
    setSelected(null);
    void list.refresh();
  };

  useShortcuts((action) => {
    if (action === 'newSandbox') setCreating(true);
    else if (action === 'toggleView') setView((v) => (v === 'details' ? 'workspace' : 'details'));
    else if (action === 'newTerminal' && current?.state === 'running') addTab(current.name);
  });

  // Notices fade on their own; errors stay until dismissed.
  useEffect(() => {
    if (!notice || notice.bad) return;
    const t = setTimeout(() => setNotice(null), 4000);
    return () => clearTimeout(t);
  }, [notice]);

  const showWorkspace = current && workspaceFor === current.name;
  const shownNotice = notice && (notice.sandbox === null || notice.sandbox === current?.name) ? notice : null;
  const inlineOp = creatingNow ? null : panelFor(current);

  // The two view tabs have one tab stop; arrow keys move between them (the WAI-ARIA tabs pattern).
  const onViewKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    e.preventDefault();
    const next: View = VIEWS[(VIEWS.indexOf(view) + (e.key === 'ArrowRight' ? 1 : VIEWS.length - 1)) % VIEWS.length]!;
    setView(next);
    e.currentTarget.querySelector<HTMLElement>(`[data-testid="view-${next}"]`)?.focus();
  };

  return (
    <div className="app">
      <SandboxList
        poll={list}
        selected={selected}
        onSelect={select}
        onCreate={() => setCreating(true)}
        newShortcut={shortcuts[0]!.keys}
        pools={pools.data}
      />
      <main className="main">
        <ConnectionBanner />
        {current ? (
          <>
            <header className="toolbar">
              <div className="toolbar-title">
                <span className="toolbar-name">{current.name}</span>
                <StateBadge state={current.state} />
                <span className="muted small">
                  {current.backend}
                  {current.image ? ` · ${current.image}` : ''}
                </span>
              </div>
              <div className="segmented" role="tablist" aria-label="View" onKeyDown={onViewKey}>
                <button
                  role="tab"
                  tabIndex={view === 'details' ? 0 : -1}
                  aria-selected={view === 'details'}
                  className={view === 'details' ? 'on' : ''}
                  data-testid="view-details"
                  onClick={() => setView('details')}
                >
                  Details
                </button>
                <button
                  role="tab"
                  tabIndex={view === 'workspace' ? 0 : -1}
                  aria-selected={view === 'workspace'}
                  className={view === 'workspace' ? 'on' : ''}
                  data-testid="view-workspace"
                  onClick={() => setView('workspace')}
                >
                  Workspace
                </button>
                <button
                  role="tab"
                  tabIndex={view === 'logs' ? 0 : -1}
                  aria-selected={view === 'logs'}
                  className={view === 'logs' ? 'on' : ''}
                  data-testid="view-logs"
                  onClick={() => setView('logs')}
                >
                  Logs
                </button>
                <button
                  role="tab"
                  tabIndex={view === 'replay' ? 0 : -1}
                  aria-selected={view === 'replay'}
                  className={view === 'replay' ? 'on' : ''}
                  data-testid="view-replay"
                  onClick={() => setView('replay')}
                >
                  Replay
                </button>
              </div>
              <CheckpointActions key={`cp-${current.name}`} sandbox={current} onChanged={() => void list.refresh()} />
              <SandboxActions key={current.name} sandbox={current} onChanged={() => void list.refresh()} onRemoved={onRemoved} />
            </header>
            <div className="content">
              {/* Overlaid on the content, not above it: a notice coming or going does not move the page. */}
              {shownNotice && (
                <div
                  className={`notice ${shownNotice.bad ? 'notice-warn' : 'notice-ok'} banner banner-overlay`}
                  role="status"
                  data-testid="notice"
                >
                  {shownNotice.text}
                  <button className="btn-icon" aria-label="Dismiss" onClick={() => setNotice(null)}>
                    ×
                  </button>
                </div>
              )}
              {inlineOp && <OperationProgress key={opKey(inlineOp)} sandbox={inlineOp.name} onBackground={() => toBackground(inlineOp)} />}
              {view === 'details' && (
                <SandboxDetails sandbox={current} visible={view === 'details'} onOpenTerminal={(s) => addTab(current.name, s)} />
              )}
              {view === 'logs' && (
                <LogsView
                  key={`${current.name}:${logsSource ?? ''}`}
                  sandbox={current.name}
                  visible={view === 'logs'}
                  initialSource={logsSource}
                />
              )}
              {view === 'replay' && (
                <Suspense fallback={<div className="center muted">Loading the replay…</div>}>
                  <ReplayView key={current.name} sandbox={current.name} visible />
                </Suspense>
              )}
              {showWorkspace && (
                <div className="workspace" hidden={view !== 'workspace'}>
                  <Suspense fallback={<div className="center muted">Loading the workspace…</div>}>
                    <Workspace
                      key={current.name}
                      sandbox={current}
                      visible={view === 'workspace'}
                      tabs={terminals[current.name] ?? { tabs: [], active: null }}
                      onAddTab={(s) => addTab(current.name, s)}
                      onCloseTab={(s) => closeTab(current.name, s)}
                      onActivateTab={(s) => activateTab(current.name, s)}
                      onCreateDesktopSandbox={() => {
                        setCreateImage(DESKTOP_IMAGE);
                        setCreating(true);
                      }}
                      onShowLogs={(source) => {
                        setLogsSource(source);
                        setView('logs');
                      }}
                    />
                  </Suspense>
                </div>
              )}
            </div>
          </>
        ) : (
          <div className="center empty">
            {shownNotice && <p className="muted">{shownNotice.text}</p>}
            {sandboxes?.length === 0 ? (
              <EmptyState busy={quick.busy} error={quick.error} onQuick={(k) => void quickCreate(k)} onOther={() => setCreating(true)} />
            ) : (
              <p className="muted">{list.error ? 'Sandbox Desk is not answering.' : 'Loading…'}</p>
            )}
          </div>
        )}
        <footer className="statusbar">
          {shortcuts.map((s) => (
            <span key={s.keys} className="shortcut" data-testid="shortcut" title={`${s.keys}: ${s.what}`}>
              <kbd>{s.keys}</kbd> {s.what}
            </span>
          ))}
          <span className="spacer" />
          <EngineStatus />
          <TaskList />
          <button className="btn btn-small" data-testid="open-images" onClick={() => setImagesOpen(true)}>
            Images
          </button>
          <span
            className="muted statusbar-mode"
            title={
              browser
                ? 'The browser keeps Ctrl+Shift+N/T for itself (private window, reopen tab): use Alt+Shift here'
                : 'Alt+Shift+N/T/D work too'
            }
          >
            {browser ? 'browser mode · Alt+Shift (Ctrl+Shift+D works too)' : 'app · Alt+Shift works too'}
          </span>
        </footer>
      </main>
      {imagesOpen && <ImagesView onClose={() => setImagesOpen(false)} />}
      {creating && (
        <CreateSandboxDialog
          initialImage={createImage}
          progress={
            creatingNow ? (
              <OperationProgress
                key={opKey(creatingNow)}
                sandbox={creatingNow.name}
                onBackground={() => {
                  // The dialog goes; its create goes on in the core and still reports here when it ends (onCreated).
                  toBackground(creatingNow);
                  setCreating(false);
                  setCreateImage(undefined);
                  selectNew(creatingNow.name);
                }}
              />
            ) : undefined
          }
          onClose={() => {
            setCreating(false);
            setCreateImage(undefined);
          }}
          onCreated={(r) => {
            setCreateImage(undefined);
            onCreated(r);
          }}
        />
      )}
    </div>
  );
}
