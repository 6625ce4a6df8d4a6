import '../test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from '../app/App.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';

describe('the workspace of a stopped sandbox', () => {
  it('reads "Stopped 10 s ago" with a Start button in the pane, not the backend\'s exit code and timestamp', async () => {
    const stoppedAt = new Date(Date.now() - 10_000).toISOString();
    const api = new FakeApi({
      sandboxes: [
        sandboxInfo({
          name: 'alpha',
          state: 'stopped',
          stateDetail: 'exited with code 143 (stopped with SIGTERM)',
          stateSince: stoppedAt,
        }),
      ],
    });
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('view-workspace'));
    const pane = await screen.findByTestId('workspace-stopped', {}, { timeout: 5000 });
    // 10 s, plus however long this run took to get here.
    const [, secs] = /^Stopped (\d+) s ago$/.exec(pane.querySelector('h4')!.textContent ?? '') ?? [];
    expect(Number(secs)).toBeGreaterThanOrEqual(10);
    expect(Number(secs)).toBeLessThan(40);
    expect(pane.textContent).not.toMatch(/exited|143|T\d\d:\d\d/);
    expect(pane.querySelector('h4')!.getAttribute('title')).toBe('exited with code 143 (stopped with SIGTERM)');
    fireEvent.click(screen.getByTestId('workspace-start'));
    await waitFor(() => expect(api.callsOf('startSandbox')).toEqual([{ name: 'alpha' }]));
  });

  it('without a known stop time it reads just "Stopped"', async () => {
    render(<App api={new FakeApi({ sandboxes: [sandboxInfo({ name: 'b', state: 'stopped' })] })} />);
    fireEvent.click(await screen.findByTestId('view-workspace'));
    expect((await screen.findByTestId('workspace-stopped', {}, { timeout: 5000 })).querySelector('h4')!.textContent).toBe('Stopped');
  });

  it('a failed start is shown in the pane, with its hint', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'c', state: 'stopped' })] }).fail(
      'startSandbox',
      'engine_unreachable',
      'Cannot reach the Docker engine',
      'is dockerd running?',
    );
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('view-workspace'));
    fireEvent.click(await screen.findByTestId('workspace-start'));
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toBe('Cannot reach the Docker engine is dockerd running?');
  });
});
