import '../test/setup.js';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { App } from './App.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';
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

const createOp = (name: string, cancelled = false) => ({
  kind: 'create' as const,
  startedAt: '2026-01-01T00:00:00.000Z',
  message: 'QEMU is running (pid 42, TCG)',
  cancellable: true,
  cancelled,
});

describe('the first ten minutes: create, long work, keyboard, empty state', () => {
  it('after Create the new sandbox is selected and its notice shows on it, not on another', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    api.on('createSandbox', (p) => {
      const s = sandboxInfo({ name: p.name });
      api.sandboxes.push(s);
      return { sandbox: s, warnings: [{ code: 'backend_warning', message: 'KVM is not usable here' }] };
    });
    render(<App api={api} />);
    await screen.findByTestId('sandbox-row-alpha');
    fireEvent.click(screen.getByTestId('create-sandbox'));
    fireEvent.change(await screen.findByTestId('create-name'), { target: { value: 'beta' } });
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    await waitFor(() => expect(screen.getByTestId('sandbox-row-beta').getAttribute('aria-selected')).toBe('true'));
    expect(document.querySelector('.toolbar-name')?.textContent).toBe('beta');
    expect(screen.getByTestId('notice').textContent).toMatch(/Created beta, with warnings/);
    // Another sandbox never wears it.
    fireEvent.click(screen.getByTestId('sandbox-row-alpha'));
    await waitFor(() => expect(document.querySelector('.toolbar-name')?.textContent).toBe('alpha'));
    expect(screen.queryByTestId('notice')).toBeNull();
  });

  it('a create under way shows its steps and one Cancel inside the dialog (no overlap, no second greyed Cancel), and can go to the background', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    let release: () => void = () => undefined;
    api
      .on('createSandbox', async (p) => {
        api.sandboxes.push(sandboxInfo({ name: p.name, backend: 'qemu', state: 'starting', operation: createOp(p.name) }));
        await new Promise<void>((r) => (release = r));
        return { sandbox: sandboxInfo({ name: p.name, backend: 'qemu' }), warnings: [] };
      })
      .on('sandboxProgress', () => ({
        kind: 'create',
        startedAt: '2026-01-01T00:00:00.000Z',
        events: [{ step: 'process', message: 'QEMU is running (pid 42, TCG)', level: 'info', at: '2026-01-01T00:00:03.000Z' }],
        done: false,
        error: null,
        cancellable: true,
        cancelled: false,
      }))
      .on('cancelOperation', () => {
        throw new Error('not in this test');
      });
    render(<App api={api} />);
    await screen.findByTestId('sandbox-row-alpha');
    fireEvent.click(screen.getByTestId('create-sandbox'));
    fireEvent.change(await screen.findByTestId('create-name'), { target: { value: 'vm1' } });
    fireEvent.click(screen.getByTestId('create-submit'));
    const panel = await screen.findByTestId('operation-progress', undefined, { timeout: 4000 });
    expect(panel.textContent).toMatch(/3\.0 s process: QEMU is running/);
    expect(within(panel).getByTestId('operation-cancel')).toBeTruthy();
    // One place: the progress is part of the dialog, and the dialog's own buttons gave way to it.
    const dialog = screen.getByRole('dialog');
    expect(dialog.contains(panel)).toBe(true);
    expect(panel.className).not.toMatch(/floating/);
    expect(within(dialog).getAllByRole('button', { name: /^Cancel/ })).toHaveLength(1);
    fireEvent.click(within(panel).getByTestId('operation-background'));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(screen.queryByTestId('operation-progress')).toBeNull();
    expect(screen.getByTestId('sandbox-row-vm1').getAttribute('aria-selected')).toBe('true');
    expect(screen.getByTestId('sandbox-state-vm1').textContent).toBe('starting');
    expect(screen.getByTestId('sandbox-op-vm1').textContent).toMatch(/QEMU is running/);
    release();
  });

  it('one "No sandboxes yet" with a desktop and a terminal-only action; the action creates and selects it', async () => {
    const api = new FakeApi();
    render(<App api={api} />);
    const empty = await screen.findByTestId('sandbox-empty');
    expect(screen.getAllByText(/No sandboxes yet/)).toHaveLength(1);
    fireEvent.click(within(empty).getByTestId('empty-create-terminal'));
    await waitFor(() =>
      expect(api.callsOf('createSandbox')).toEqual([{ name: 'terminal-1', backend: 'docker', image: 'sandbox-desk/base:latest' }]),
    );
    await waitFor(() => expect(document.querySelector('.toolbar-name')?.textContent).toBe('terminal-1'));
    expect(screen.getByTestId('notice').textContent).toBe('Created terminal-1.×');
  });

  it('the sidebar is one tab stop; arrow keys, Home and End move the selection', async () => {
    const api = new FakeApi({ sandboxes: ['a', 'b', 'c'].map((name) => sandboxInfo({ name })) });
    render(<App api={api} />);
    await waitFor(() => expect(screen.getByTestId('sandbox-row-a').getAttribute('aria-selected')).toBe('true'));
    const rows = () => ['a', 'b', 'c'].map((n) => screen.getByTestId(`sandbox-row-${n}`));
    expect(rows().map((r) => r.tabIndex)).toEqual([0, -1, -1]);
    rows()[0]!.focus();
    fireEvent.keyDown(rows()[0]!, { key: 'ArrowDown' });
    await waitFor(() => expect(rows()[1]!.getAttribute('aria-selected')).toBe('true'));
    expect(document.activeElement).toBe(rows()[1]);
    expect(rows().map((r) => r.tabIndex)).toEqual([-1, 0, -1]);
    fireEvent.keyDown(rows()[1]!, { key: 'End' });
    await waitFor(() => expect(rows()[2]!.getAttribute('aria-selected')).toBe('true'));
    fireEvent.keyDown(rows()[2]!, { key: 'Home' });
    await waitFor(() => expect(rows()[0]!.getAttribute('aria-selected')).toBe('true'));
  });

  it('the view tabs have a roving tabindex; arrow keys switch them', async () => {
    render(<App api={new FakeApi({ sandboxes: [sandboxInfo({ name: 'a', state: 'stopped' })] })} />);
    const details = await screen.findByTestId('view-details');
    const workspace = screen.getByTestId('view-workspace');
    expect([details.tabIndex, workspace.tabIndex]).toEqual([0, -1]);
    details.focus();
    fireEvent.keyDown(details, { key: 'ArrowRight' });
    await waitFor(() => expect(workspace.getAttribute('aria-selected')).toBe('true'));
    expect(document.activeElement).toBe(workspace);
    expect([details.tabIndex, workspace.tabIndex]).toEqual([-1, 0]);
  });

  it('in browser mode the footer shows the Alt+Shift shortcuts (the browser keeps Ctrl+Shift+N/T)', async () => {
    render(<App api={new FakeApi()} />);
    await screen.findByTestId('sandbox-empty');
    const keys = screen.getAllByTestId('shortcut').map((s) => s.querySelector('kbd')?.textContent);
    expect(keys).toEqual(['Alt+Shift+N', 'Alt+Shift+T', 'Alt+Shift+D']);
  });
});
