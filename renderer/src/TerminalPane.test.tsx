import './test/setup.js';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiProvider } from './api-context.js';
import { TerminalPane, type TerminalTabs } from './TerminalPane.js';
import { FakeApi, sessionInfo } from './test/fake-api.js';

// xterm needs a real layout and canvas; these stand-ins record what the pane does with them.
const log = vi.hoisted(() => ({
  terminals: [] as Array<{ opened: boolean; disposed: boolean; addons: string[] }>,
  attachedWhile: [] as number[],
}));
vi.mock('@xterm/xterm', () => ({
  Terminal: class {
    cols = 80;
    rows = 24;
    opened = false;
    disposed = false;
    addons: string[] = [];
    constructor() {
      log.terminals.push(this);
    }
    loadAddon(addon: { kind: string; activate?: (t: unknown) => void }) {
      this.addons.push(addon.kind);
      addon.activate?.(this);
    }
    open() {
      this.opened = true;
    }
    attachCustomKeyEventHandler() {}
    write() {}
    focus() {}
    dispose() {
      this.disposed = true;
    }
  },
}));
vi.mock('@xterm/addon-fit', () => ({
  FitAddon: class {
    kind = 'fit';
    fit() {}
  },
}));
vi.mock('@xterm/addon-attach', () => ({
  AttachAddon: class {
    kind = 'attach';
    constructor(socket: { readyState: number }) {
      // The real addon sends on the socket at once; it must never be made while CONNECTING.
      log.attachedWhile.push(socket.readyState);
    }
  },
}));

class FakeSocket extends EventTarget {
  static all: FakeSocket[] = [];
  readyState = 0;
  binaryType = 'blob';
  closed = false;
  constructor(readonly url: string) {
    super();
    FakeSocket.all.push(this);
  }
  open() {
    this.readyState = 1;
    this.dispatchEvent(new Event('open'));
  }
  close() {
    this.closed = true;
    this.readyState = 3;
  }
}

beforeEach(() => {
  log.terminals.length = 0;
  log.attachedWhile.length = 0;
  FakeSocket.all = [];
  vi.stubGlobal('WebSocket', FakeSocket);
});
afterEach(() => vi.unstubAllGlobals());

function Harness({ api, initial }: { api: FakeApi; initial: TerminalTabs }) {
  return (
    <ApiProvider api={api}>
      <Stateful initial={initial} />
    </ApiProvider>
  );
}

function Stateful({ initial }: { initial: TerminalTabs }) {
  const [tabs, setTabs] = useState(initial);
  return (
    <TerminalPane
      sandbox="alpha"
      visible
      tabs={tabs}
      onAdd={(s) => setTabs((t) => ({ tabs: [...t.tabs, s ?? `term-${t.tabs.length + 1}`], active: s ?? `term-${t.tabs.length + 1}` }))}
      onClose={(s) => setTabs((t) => ({ tabs: t.tabs.filter((x) => x !== s), active: t.tabs.filter((x) => x !== s)[0] ?? null }))}
      onActivate={(s) => setTabs((t) => ({ ...t, active: s }))}
    />
  );
}

describe('terminal pane', () => {
  it('opens a terminal per tab on its session, attaching only once the socket is open', async () => {
    const api = new FakeApi({ sessions: { alpha: [sessionInfo({ key: 'term-1', cwd: '/home/dev/project', source: 'terminal' })] } });
    render(<Harness api={api} initial={{ tabs: ['term-1'], active: 'term-1' }} />);
    expect(screen.getByTestId('terminal-pane')).toBeTruthy();
    expect(screen.getByTestId('terminal-tab-term-1')).toBeTruthy();
    expect(screen.getByTestId('terminal-term-1')).toBeTruthy();
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    expect(api.callsOf('terminalOpen')).toEqual([{ sandbox: 'alpha', session: 'term-1', cols: 80, rows: 24 }]);
    expect(FakeSocket.all[0]!.binaryType).toBe('arraybuffer');
    expect(log.terminals[0]!.addons).toEqual(['fit']);
    act(() => FakeSocket.all[0]!.open());
    expect(log.terminals[0]!.addons).toEqual(['fit', 'attach']);
    expect(log.attachedWhile).toEqual([1]);
    expect(window.__sdeskTerminals?.['term-1']).toBe(log.terminals[0]);
    // The session's cwd record, above the terminal.
    await waitFor(() => expect(screen.getByTestId('terminal-cwd').textContent).toContain('/home/dev/project'));
  });

  it('"+" adds a tab with its own session; closing a tab disposes its terminal and closes its socket', async () => {
    const api = new FakeApi();
    render(<Harness api={api} initial={{ tabs: ['term-1'], active: 'term-1' }} />);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    fireEvent.click(screen.getByTestId('terminal-add'));
    expect(await screen.findByTestId('terminal-tab-term-2')).toBeTruthy();
    await waitFor(() => expect(api.callsOf('terminalOpen').map((c) => c.session)).toEqual(['term-1', 'term-2']));
    fireEvent.click(screen.getByRole('button', { name: 'Close term-1' }));
    expect(screen.queryByTestId('terminal-tab-term-1')).toBeNull();
    expect(log.terminals[0]!.disposed).toBe(true);
    expect(FakeSocket.all[0]!.closed).toBe(true);
    expect(window.__sdeskTerminals?.['term-1']).toBeUndefined();
    expect(log.terminals[1]!.disposed).toBe(false);
  });

  it('says how to open a terminal when none is open', () => {
    render(<Harness api={new FakeApi()} initial={{ tabs: [], active: null }} />);
    expect(screen.getByText(/No terminal open/)).toBeTruthy();
  });

  it('shows why a terminal could not be opened, with a way to retry', async () => {
    const api = new FakeApi().fail('terminalOpen', 'sandbox_not_running', 'alpha is not running');
    render(<Harness api={api} initial={{ tabs: ['term-1'], active: 'term-1' }} />);
    expect((await screen.findByRole('alert')).textContent).toContain('alpha is not running');
    expect(screen.getByRole('button', { name: 'Reconnect' })).toBeTruthy();
  });
});
