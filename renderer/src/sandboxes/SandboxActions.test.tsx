import '../test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from '../app/App.js';
import { FakeApi, sandboxInfo, terminalInfo } from '../test/fake-api.js';

describe('sandbox actions', () => {
  it('stop with open terminals asks first, naming how many; cancel keeps it running', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    api.terminals = [
      terminalInfo({ terminalId: 'a1', sandbox: 'alpha', session: 'term-1' }),
      terminalInfo({ terminalId: 'a2', sandbox: 'alpha', session: 'term-2' }),
      terminalInfo({ terminalId: 'b1', sandbox: 'beta', session: 'term-1' }),
    ];
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-stop'));
    const ask = await screen.findByRole('alertdialog', { name: 'Stop alpha' });
    expect(ask.textContent).toMatch(/2 open terminals; stopping ends their shells/);
    expect(api.callsOf('stopSandbox')).toHaveLength(0);
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(api.callsOf('stopSandbox')).toHaveLength(0);
    fireEvent.click(screen.getByTestId('sandbox-stop'));
    fireEvent.click(await screen.findByTestId('confirm-stop'));
    await waitFor(() => expect(api.callsOf('stopSandbox')).toEqual([{ name: 'alpha' }]));
  });

  it('remove needs a confirmation, and forces a running sandbox', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-remove'));
    expect(api.callsOf('removeSandbox')).toHaveLength(0);
    expect(screen.getByRole('alertdialog').textContent).toMatch(/running and will be stopped first/);
    fireEvent.click(screen.getByTestId('confirm-remove'));
    await waitFor(() => expect(api.callsOf('removeSandbox')).toEqual([{ name: 'alpha', force: true }]));
    await waitFor(() => expect(screen.queryByTestId('sandbox-row-alpha')).toBeNull());
    expect(await screen.findByTestId('sandbox-empty')).toBeTruthy();
  });

  it('cancel keeps the sandbox; a stopped one is removed without force', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'beta', state: 'stopped' })] });
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-remove'));
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByTestId('confirm-remove')).toBeNull();
    fireEvent.click(screen.getByTestId('sandbox-remove'));
    fireEvent.click(screen.getByTestId('confirm-remove'));
    await waitFor(() => expect(api.callsOf('removeSandbox')).toEqual([{ name: 'beta', force: false }]));
  });

  it('start and stop call the server and show the new state', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'stopped' })] });
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-start'));
    await waitFor(() => expect(api.callsOf('startSandbox')).toEqual([{ name: 'alpha' }]));
    expect((await screen.findByTestId('sandbox-state-alpha')).textContent).toBe('running');
    fireEvent.click(await screen.findByTestId('sandbox-stop'));
    await waitFor(() => expect(api.callsOf('stopSandbox')).toEqual([{ name: 'alpha' }]));
    await waitFor(() => expect(screen.getByTestId('sandbox-state-alpha').textContent).toBe('stopped'));
  });

  it('shows a failed start inline', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'stopped' })] }).fail(
      'startSandbox',
      'engine_unreachable',
      'Cannot reach the Docker engine',
      'is dockerd running?',
    );
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-start'));
    const alert = await screen.findByText(/Cannot reach the Docker engine/);
    expect(alert.textContent).toContain('is dockerd running?');
  });

  it('shows each boot step while a start runs, warnings included', async () => {
    let release: () => void = () => undefined;
    let step = {
      step: 'process',
      message: 'starting QEMU (TCG, 2 CPU, 1024 MiB, SSH on 127.0.0.1:40022)',
      level: 'info' as 'info' | 'warning',
    };
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'vm', backend: 'qemu', state: 'stopped' })] })
      .on('startSandbox', async (p) => {
        await new Promise<void>((r) => (release = r));
        return sandboxInfo({ name: p.name, backend: 'qemu', state: 'running' });
      })
      .on('sandboxProgress', () => ({
        kind: 'start',
        startedAt: '2026-01-01T00:00:00.000Z',
        done: false,
        error: null,
        cancellable: true,
        cancelled: false,
        events: [{ ...step, at: '2026-01-01T00:00:01.000Z' }],
      }));
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-start'));
    expect((await screen.findByTestId('sandbox-progress')).textContent).toContain('starting QEMU (TCG');
    step = { step: 'accel', message: 'KVM does not work on this host; restarting under TCG', level: 'warning' };
    await waitFor(() => expect(screen.getByTestId('sandbox-progress').textContent).toContain('KVM does not work'), { timeout: 3000 });
    expect(screen.getByTestId('sandbox-progress').className).toContain('progress-warning');
    release();
    await waitFor(() => expect(screen.queryByTestId('sandbox-progress')).toBeNull());
  });

  it('a sandbox whose backend cannot answer cannot be started, and says why', async () => {
    const api = new FakeApi({
      sandboxes: [sandboxInfo({ name: 'p', backend: 'ssh', state: 'unavailable', stateDetail: 'plugin host crashed' })],
    });
    render(<App api={api} />);
    expect((await screen.findByTestId<HTMLButtonElement>('sandbox-start')).disabled).toBe(true);
  });

  it('a destructive confirmation takes the focus on Cancel, keeps Tab inside, and Escape returns it to the button', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'gamma', state: 'stopped' })] });
    render(<App api={api} />);
    const opener = await screen.findByTestId('sandbox-remove');
    opener.focus();
    fireEvent.click(opener);
    const ask = screen.getByRole('alertdialog', { name: 'Remove gamma' });
    expect(document.activeElement).toBe(screen.getByTestId('confirm-cancel'));
    fireEvent.keyDown(document.activeElement!, { key: 'Tab' });
    expect(ask.contains(document.activeElement)).toBe(true);
    fireEvent.keyDown(document.activeElement!, { key: 'Escape' });
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(document.activeElement).toBe(opener);
    expect(api.callsOf('removeSandbox')).toHaveLength(0);
  });
});
