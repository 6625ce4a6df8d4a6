import '../test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from '../app/App.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';

const cp = (over: Record<string, unknown> = {}) => ({
  id: 'c1',
  sandbox: 'alpha',
  backend: 'docker',
  label: 'before the agent',
  createdAt: new Date().toISOString(),
  sizeBytes: 3 * 1024 * 1024,
  memory: false,
  broken: false,
  brokenDetail: null,
  sessions: [{ key: 'agent', cwd: '/home/agent/project' }],
  ...over,
});

describe('checkpoints panel and toolbar', () => {
  it('lists checkpoints with label, size and memory; a broken one is marked and cannot be restored', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    api.checkpoints = [cp(), cp({ id: 'c2', label: null, broken: true, brokenDetail: 'image was removed outside Sandbox Desk' })];
    render(<App api={api} />);
    const row = await screen.findByTestId('checkpoint-row-c1');
    expect(row.textContent).toMatch(/before the agent/);
    expect(row.textContent).toMatch(/3\.0 MiB/);
    expect(row.textContent).toMatch(/disk only/);
    expect(row.textContent).toMatch(/agent: \/home\/agent\/project/);
    expect(screen.getByTestId('checkpoint-broken-c2').textContent).toMatch(/removed outside/);
    expect(screen.getByTestId<HTMLButtonElement>('checkpoint-restore-c2').disabled).toBe(true);
  });

  it('restore asks first, then restores onto this sandbox', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    api.checkpoints = [cp()];
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('checkpoint-restore-c1'));
    expect(screen.getByRole('alertdialog', { name: 'Restore alpha' }).textContent).toMatch(/each session goes back/);
    expect(api.callsOf('restoreSandbox')).toHaveLength(0);
    fireEvent.click(screen.getByTestId('confirm-restore'));
    await waitFor(() => expect(api.callsOf('restoreSandbox')).toEqual([{ sandbox: 'alpha', checkpoint: 'c1' }]));
    expect((await screen.findByTestId('checkpoint-result')).textContent).toMatch(/Restored alpha/);
  });

  it('fork asks for a name and count and names the forks; an error from the core is shown with its hint', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    api.checkpoints = [cp()];
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('checkpoint-fork-c1'));
    fireEvent.change(screen.getByLabelText('Fork name'), { target: { value: 'try' } });
    fireEvent.change(screen.getByLabelText('Fork count'), { target: { value: '3' } });
    expect(screen.getByRole('alertdialog', { name: 'Fork alpha' }).textContent).toMatch(/try-1 … try-3/);
    fireEvent.click(screen.getByTestId('confirm-fork'));
    await waitFor(() => expect(api.callsOf('forkSandbox')).toEqual([{ sandbox: 'alpha', checkpoint: 'c1', as: 'try', count: 3 }]));
    expect((await screen.findByTestId('checkpoint-result')).textContent).toMatch(/Forked try-1, try-2, try-3/);

    api.fail('forkSandbox', 'name_taken', 'a sandbox named try already exists', 'choose another --as name');
    fireEvent.click(screen.getByTestId('checkpoint-fork-c1'));
    fireEvent.change(screen.getByLabelText('Fork name'), { target: { value: 'try' } });
    fireEvent.click(screen.getByTestId('confirm-fork'));
    // Other panels (the files panel) may show alerts of their own: the fork's is among them.
    await waitFor(() =>
      expect(
        screen
          .getAllByRole('alert')
          .map((el) => el.textContent)
          .join('\n'),
      ).toMatch(/already exists — choose another/),
    );
  });

  it("'Forked X' stays on the source's panel: the fork's own panel does not show it", async () => {
    // The list already shows the fork's name (the window's list refreshes on its own clock).
    const api = new FakeApi({
      sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' }), sandboxInfo({ name: 'try', state: 'running' })],
    });
    api.checkpoints = [cp()];
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-row-alpha'));
    fireEvent.click(await screen.findByTestId('checkpoint-fork-c1'));
    fireEvent.change(screen.getByLabelText('Fork name'), { target: { value: 'try' } });
    fireEvent.click(screen.getByTestId('confirm-fork'));
    expect((await screen.findByTestId('checkpoint-result')).textContent).toMatch(/Forked try/);
    fireEvent.click(await screen.findByTestId('sandbox-row-try'));
    await waitFor(() => expect(screen.getByTestId('checkpoints-panel').textContent).toMatch(/of try yet|before the agent/));
    expect(screen.queryByTestId('checkpoint-result')).toBeNull();
    fireEvent.click(screen.getByTestId('sandbox-row-alpha'));
    expect((await screen.findByTestId('checkpoint-result')).textContent).toMatch(/Forked try/);
  });

  it('the toolbar Checkpoint button saves one; Pause and Resume switch', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('sandbox-checkpoint'));
    await waitFor(() => expect(api.callsOf('checkpointSandbox')).toEqual([{ sandbox: 'alpha' }]));
    expect((await screen.findByText(/Checkpoint cp1 saved/)).textContent).toBeTruthy();
    fireEvent.click(screen.getByTestId('sandbox-pause'));
    await waitFor(() => expect(api.callsOf('pauseSandbox')).toEqual([{ name: 'alpha' }]));
    fireEvent.click(await screen.findByTestId('sandbox-resume'));
    await waitFor(() => expect(api.callsOf('resumeSandbox')).toEqual([{ name: 'alpha' }]));
  });
});
