import '../test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { App } from './App.js';
import { desktopStatus, FakeApi, sandboxInfo } from '../test/fake-api.js';
import { stubWebSocketEachTest } from '../test/terminal-stubs.js';

vi.mock('@novnc/novnc', () => ({
  default: class extends EventTarget {
    viewOnly = false;
    scaleViewport = false;
    background = '';
    disconnect() {}
  },
}));
// xterm needs a real layout and canvas: stand-ins (shared in test/terminal-stubs.ts).
vi.mock('@xterm/xterm', () => import('../test/terminal-stubs.js').then((m) => m.xtermModule));
vi.mock('@xterm/addon-fit', () => import('../test/terminal-stubs.js').then((m) => m.fitAddonModule));
vi.mock('@xterm/addon-attach', () => import('../test/terminal-stubs.js').then((m) => m.attachAddonModule));
stubWebSocketEachTest();

const key = (k: string) => fireEvent.keyDown(window, { key: k, ctrlKey: true, shiftKey: true });

describe('app', () => {
  it('switches between details and a workspace that opens term-1, by button and by Ctrl+Shift+D', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })], desktops: { alpha: desktopStatus({ sandbox: 'alpha' }) } });
    render(<App api={api} />);
    expect(await screen.findByTestId('details-home')).toBeTruthy();
    fireEvent.click(screen.getByTestId('view-workspace'));
    expect(await screen.findByTestId('screen-pane')).toBeTruthy();
    expect(await screen.findByTestId('terminal-tab-term-1')).toBeTruthy();
    await waitFor(() => expect(api.callsOf('terminalOpen').map((c) => c.session)).toEqual(['term-1']));
    key('D');
    expect(await screen.findByTestId('details-home')).toBeTruthy();
    // The workspace stays mounted (hidden): its shell is not reopened when coming back.
    key('D');
    await waitFor(() => expect(screen.queryByTestId('details-home')).toBeNull());
    expect(api.callsOf('terminalOpen')).toHaveLength(1);
    key('T');
    expect(await screen.findByTestId('terminal-tab-term-2')).toBeTruthy();
  });

  it('Ctrl+Shift+N opens the create dialog; Escape closes it', async () => {
    render(<App api={new FakeApi()} />);
    await screen.findByTestId('sandbox-empty');
    key('N');
    const dialog = await screen.findByRole('dialog');
    fireEvent.keyDown(dialog, { key: 'Escape' });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
  });

  it('a stopped sandbox has no workspace streams, and says how to start it', async () => {
    render(<App api={new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'stopped' })] })} />);
    fireEvent.click(await screen.findByTestId('view-workspace'));
    expect(await screen.findByText(/Start it/)).toBeTruthy();
    expect(screen.queryByTestId('screen-pane')).toBeNull();
  });
});
