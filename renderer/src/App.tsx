import { lazy, Suspense, useCallback, useEffect, useState } from 'react';
import type { ApiClient, CreateSandboxResult, SandboxInfo } from '../../src/api/contract.js';
import { ApiProvider, useApi } from './api-context.js';
import { DESKTOP_IMAGE } from '../../src/shared/desktop-types.js';
import { CreateSandboxDialog } from './CreateSandboxDialog.js';
import { ImagesView } from './ImagesView.js';
import { usePoll } from './hooks/usePoll.js';
import { SandboxActions } from './SandboxActions.js';
import { SandboxDetails } from './SandboxDetails.js';
import { SandboxList, StateBadge } from './SandboxList.js';
import { SHORTCUTS, useShortcuts } from './shortcuts.js';
import type { TerminalTabs } from './TerminalPane.js';
import { warningLabel } from './warnings.js';

// The workspace pulls in noVNC and xterm (most of the bundle, and noVNC's top-level await): loaded
// when first opened, so the list and details show at once.
const Workspace = lazy(() => import('./Workspace.js').then((m) => ({ default: m.Workspace })));

type View = 'details' | 'workspace';

export function App({ api }: { api: ApiClient }) {
  return (
    <ApiProvider api={api}>
      <Desk />
    </ApiProvider>
  );
}

/** The first free term-N: tabs closed in the middle leave gaps that are reused. */
function nextTerminalName(tabs: string[]): string {
  for (let i = 1; ; i++) if (!tabs.includes(`term-${i}`)) return `term-${i}`;
}

function Desk() {
  const api = useApi();
  const list = usePoll<SandboxInfo[]>(() => api.call('listSandboxes', {}), 2000, 'sandboxes');
  const [selected, setSelected] = useState<string | null>(null);
  const [view, setView] = useState<View>('details');
  const [creating, setCreating] = useState(false);
  const [imagesOpen, setImagesOpen] = useState(false);
  // The image the create dialog opens with ("Create a desktop sandbox" prefills the desktop image).
  const [createImage, setCreateImage] = useState<string | undefined>(undefined);
  // The workspace stays mounted (hidden) while the details are shown, so shells and the screen survive the switch.
  const [workspaceFor, setWorkspaceFor] = useState<string | null>(null);
  const [terminals, setTerminals] = useState<Record<string, TerminalTabs>>({});
  const [notice, setNotice] = useState<{ text: string; bad: boolean } | null>(null);

  const sandboxes = list.data;
  const current = sandboxes?.find((s) => s.name === selected) ?? null;

  // Keep a selection: the first sandbox when none (or the selected one went away).
  useEffect(() => {
    if (!sandboxes) return;
    if (!selected || !sandboxes.some((s) => s.name === selected)) setSelected(sandboxes[0]?.name ?? null);
  }, [sandboxes, selected]);

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
    setSelected(r.sandbox.name);
    setView('details');
    setNotice(
      r.warnings.length
        ? {
            text: `Created ${r.sandbox.name}, with warnings: ${r.warnings.map((w) => `${warningLabel(w).label} — ${w.message}`).join('; ')}`,
            bad: true,
          }
        : { text: `Created ${r.sandbox.name}.`, bad: false },
    );
    void list.refresh();
  };

  const onRemoved = (name: string) => {
    setNotice({ text: `Removed ${name}.`, bad: false });
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

  return (
    <div className="app">
      <SandboxList poll={list} selected={selected} onSelect={select} onCreate={() => setCreating(true)} />
      <main className="main">
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
              <div className="segmented" role="tablist" aria-label="View">
                <button
                  role="tab"
                  aria-selected={view === 'details'}
                  className={view === 'details' ? 'on' : ''}
                  data-testid="view-details"
                  onClick={() => setView('details')}
                >
                  Details
                </button>
                <button
                  role="tab"
                  aria-selected={view === 'workspace'}
                  className={view === 'workspace' ? 'on' : ''}
                  data-testid="view-workspace"
                  onClick={() => setView('workspace')}
                >
                  Workspace
                </button>
              </div>
              <SandboxActions key={current.name} sandbox={current} onChanged={() => void list.refresh()} onRemoved={onRemoved} />
            </header>
            {notice && (
              <div className={`notice ${notice.bad ? 'notice-warn' : 'notice-ok'} banner`} role="status">
                {notice.text}
                <button className="btn-icon" aria-label="Dismiss" onClick={() => setNotice(null)}>
                  ×
                </button>
              </div>
            )}
            <div className="content">
              {view === 'details' && (
                <SandboxDetails sandbox={current} visible={view === 'details'} onOpenTerminal={(s) => addTab(current.name, s)} />
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
                    />
                  </Suspense>
                </div>
              )}
            </div>
          </>
        ) : (
          <div className="center empty">
            {notice && <p className="muted">{notice.text}</p>}
            {sandboxes?.length === 0 ? (
              <>
                <h2>No sandbox selected</h2>
                <p className="muted">Create a sandbox to get a terminal and, with a desktop image, a bot desktop side by side.</p>
                <button className="btn btn-primary" onClick={() => setCreating(true)}>
                  New sandbox
                </button>
              </>
            ) : (
              <p className="muted">{list.error ? 'Sandbox Desk is not answering.' : 'Loading…'}</p>
            )}
          </div>
        )}
        <footer className="statusbar">
          {SHORTCUTS.map((s) => (
            <span key={s.keys} className="shortcut">
              <kbd>{s.keys}</kbd> {s.what}
            </span>
          ))}
          <span className="spacer" />
          <button className="btn btn-small" data-testid="open-images" onClick={() => setImagesOpen(true)}>
            Images
          </button>
          <span className="muted" title="In a browser tab, Alt+Shift+N/T/D work too (the browser keeps Ctrl+Shift+N/T)">
            {window.sandboxDesk ? 'app' : 'browser mode'} · Alt+Shift works too
          </span>
        </footer>
      </main>
      {imagesOpen && <ImagesView onClose={() => setImagesOpen(false)} />}
      {creating && (
        <CreateSandboxDialog
          initialImage={createImage}
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
