import '../test/setup.js';
import { render, screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from '../app/App.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';

describe('sandbox list', () => {
  it('shows each sandbox with its backend, state and image', async () => {
    const api = new FakeApi({
      sandboxes: [
        sandboxInfo({ name: 'alpha', state: 'running' }),
        sandboxInfo({ name: 'beta', state: 'stopped', image: 'sandbox-desk/desktop:latest' }),
      ],
    });
    render(<App api={api} />);
    const alpha = await screen.findByTestId('sandbox-row-alpha');
    expect(within(alpha).getByTestId('sandbox-state-alpha').textContent).toBe('running');
    expect(alpha.textContent).toContain('docker');
    const beta = screen.getByTestId('sandbox-row-beta');
    expect(within(beta).getByTestId('sandbox-state-beta').textContent).toBe('stopped');
    expect(beta.textContent).toContain('sandbox-desk/desktop:latest');
    expect(screen.queryByTestId('sandbox-empty')).toBeNull();
  });

  it('says what to do when there are no sandboxes', async () => {
    render(<App api={new FakeApi()} />);
    const empty = await screen.findByTestId('sandbox-empty');
    expect(empty.textContent).toMatch(/No sandboxes yet/);
    expect(empty.textContent).toMatch(/Desktop sandbox/);
  });

  it('polls, so a state change shows without a reload', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
    render(<App api={api} />);
    await screen.findByTestId('sandbox-row-alpha');
    api.sandboxes[0]!.state = 'stopped';
    await screen.findByText('stopped', { selector: '[data-testid="sandbox-state-alpha"]' }, { timeout: 3500 });
    expect(api.callsOf('listSandboxes').length).toBeGreaterThanOrEqual(2);
  });

  it('shows the server error when the list cannot be read', async () => {
    const api = new FakeApi().fail('listSandboxes', 'engine_unreachable', 'Docker is not running', 'start Docker');
    render(<App api={api} />);
    const alert = await screen.findByText(/Docker is not running/);
    expect(alert.textContent).toContain('start Docker');
  });
});
