import './testing/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from './App.js';
import { FakeApi, sandboxInfo } from './testing/fake-api.js';

describe('sandbox actions', () => {
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
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'stopped' })] }).fail('startSandbox', 'engine_unreachable', 'Cannot reach the Docker engine', 'is dockerd running?');
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-start'));
    const alert = await screen.findByText(/Cannot reach the Docker engine/);
    expect(alert.textContent).toContain('is dockerd running?');
  });
});
