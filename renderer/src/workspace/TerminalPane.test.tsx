import '../test/setup.js';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { TerminalPane, type TerminalTabs } from './TerminalPane.js';
import { FakeApi, sessionInfo, terminalInfo } from '../test/fake-api.js';
import { CLOSE } from '../../../src/shared/stream-close-codes.js';

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
    fireEvent.click(screen.getByTestId('terminal-close-term-1'));
    expect(screen.queryByTestId('terminal-tab-term-1')).toBeNull();
    expect(log.terminals[0]!.disposed).toBe(true);
    expect(FakeSocket.all[0]!.closed).toBe(true);
    expect(window.__sdeskTerminals?.['term-1']).toBeUndefined();
    expect(log.terminals[1]!.disposed).toBe(false);
  });

  it('Delete on the focused tab closes it (the × is for the pointer; the tablist holds only tabs)', async () => {
    const api = new FakeApi();
    render(<Harness api={api} initial={{ tabs: ['term-1', 'term-2'], active: 'term-1' }} />);
    const tab = await screen.findByTestId('terminal-tab-term-2');
    expect(tab.getAttribute('role')).toBe('tab');
    expect([...screen.getByRole('tablist').querySelectorAll('[role="tab"]')]).toHaveLength(2);
    fireEvent.keyDown(tab, { key: 'Delete' });
    expect(screen.queryByTestId('terminal-tab-term-2')).toBeNull();
    expect(screen.getByTestId('terminal-tab-term-1')).toBeTruthy();
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

  it('leaving the pane (another sandbox selected) keeps the shell; coming back reattaches to it, no new shell', async () => {
    const api = new FakeApi();
    const first = render(<Harness api={api} initial={{ tabs: ['term-1'], active: 'term-1' }} />);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    act(() => FakeSocket.all[0]!.open());
    const [opened] = api.terminals;
    expect(opened?.session).toBe('term-1');
    first.unmount();
    // The view detached; the core's terminal is not ended.
    expect(FakeSocket.all[0]!.closed).toBe(true);
    expect(api.callsOf('terminalClose')).toEqual([]);
    expect(api.terminals).toHaveLength(1);

    render(<Harness api={api} initial={{ tabs: ['term-1'], active: 'term-1' }} />);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(2));
    expect(api.callsOf('terminalOpen')).toHaveLength(1);
    expect(api.callsOf('terminalAttach')).toEqual([{ terminalId: opened!.terminalId }]);
    expect(FakeSocket.all[1]!.url).toContain(`/ws/terminal/${opened!.terminalId}?ticket=`);
  });

  it('a restore closes the stream as restarting: the tab waits for the same terminal and reattaches to it, no new shell', async () => {
    const api = new FakeApi();
    render(<Harness api={api} initial={{ tabs: ['term-1'], active: 'term-1' }} />);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    act(() => FakeSocket.all[0]!.open());
    const id = api.terminals[0]!.terminalId;
    // The core holds the terminal while the sandbox is restored, and closes the viewer's stream so.
    api.terminals[0]!.restarting = true;
    act(() => {
      FakeSocket.all[0]!.dispatchEvent(
        Object.assign(new Event('close'), { code: CLOSE.restarting, reason: 'the sandbox is being restored' }),
      );
    });
    expect(await screen.findByTestId('terminal-restarting-term-1')).toBeTruthy();
    expect(screen.queryByText(/Terminal closed/)).toBeNull();
    await waitFor(() => expect(api.callsOf('listTerminals').length).toBeGreaterThanOrEqual(2));
    expect(api.callsOf('terminalAttach')).toEqual([]);
    // Back under the same id.
    delete api.terminals[0]!.restarting;
    await waitFor(() => expect(FakeSocket.all).toHaveLength(2), { timeout: 3000 });
    expect(api.callsOf('terminalAttach')).toEqual([{ terminalId: id }]);
    expect(api.callsOf('terminalOpen')).toHaveLength(1);
    expect(FakeSocket.all[1]!.url).toContain(`/ws/terminal/${id}?ticket=`);
    act(() => FakeSocket.all[1]!.open());
    expect(screen.queryByTestId('terminal-restarting-term-1')).toBeNull();
  });

  it("closing a tab ends its shell in the core (terminalClose with the tab's terminal)", async () => {
    const api = new FakeApi();
    render(<Harness api={api} initial={{ tabs: ['term-1'], active: 'term-1' }} />);
    await waitFor(() => expect(FakeSocket.all).toHaveLength(1));
    const id = api.terminals[0]!.terminalId;
    fireEvent.click(screen.getByTestId('terminal-close-term-1'));
    await waitFor(() => expect(api.callsOf('terminalClose')).toEqual([{ terminalId: id }]));
    expect(api.terminals).toEqual([]);
  });

  it("a second window finds the sandbox's open terminals and gives each a tab, keeping its active one", async () => {
    const api = new FakeApi();
    api.terminals = [
      terminalInfo({ terminalId: 'aa01', sandbox: 'alpha', session: 'term-1' }),
      terminalInfo({ terminalId: 'aa03', sandbox: 'alpha', session: 'agent-work' }),
      terminalInfo({ terminalId: 'bb01', sandbox: 'beta', session: 'beta-only' }),
    ];
    render(<Harness api={api} initial={{ tabs: ['term-1'], active: 'term-1' }} />);
    expect(await screen.findByTestId('terminal-tab-agent-work')).toBeTruthy();
    expect(screen.queryByTestId('terminal-tab-beta-only')).toBeNull();
    expect(screen.getByTestId('terminal-tab-term-1').getAttribute('aria-selected')).toBe('true');
    await waitFor(() =>
      expect(
        api
          .callsOf('terminalAttach')
          .map((c) => c.terminalId)
          .sort(),
      ).toEqual(['aa01', 'aa03']),
    );
    expect(api.callsOf('terminalOpen')).toEqual([]);
  });

  it("says when the tab's shell is attached to its session (the agent's commands run there)", async () => {
    const api = new FakeApi();
    api.terminals = [terminalInfo({ terminalId: 'aa03', sandbox: 'alpha', session: 'agent-work', attached: true })];
    render(<Harness api={api} initial={{ tabs: ['agent-work'], active: 'agent-work' }} />);
    await waitFor(() => expect(screen.getByTestId('terminal-attached').textContent).toBe('attached to session agent-work'));
    expect(screen.getByTestId('terminal-tab-agent-work').getAttribute('title')).toMatch(
      /attached: the agent's commands in this session run here/,
    );
  });
});
