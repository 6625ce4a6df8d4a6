import '../test/setup.js';
import { render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from '../app/App.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';

const pool = (over: Record<string, unknown> = {}) => ({
  key: 'k1',
  template: { image: 'sandbox-desk/base:latest', cpus: null, memoryMiB: null, desktop: false },
  description: 'sandbox-desk/base:latest',
  size: 2,
  ready: 1,
  filling: 1,
  state: 'filling' as const,
  warning: null,
  memoryMiB: 512,
  ...over,
});

describe('warm pools in the sandbox list', () => {
  it('off by default: no pool section', async () => {
    render(<App api={new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] })} />);
    await screen.findByTestId('sandbox-row-alpha');
    expect(screen.queryByTestId('pool-section')).toBeNull();
  });

  it('each pool with its template, ready of size, what is being made, the memory against the budget; a stopped pool says why', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    api.pools = {
      memoryBudgetMiB: 2048,
      memoryMiB: 1536,
      refilling: true,
      pools: [
        pool(),
        pool({
          key: 'k2',
          description: 'sandbox-desk/desktop:latest, desktop',
          size: 1,
          ready: 0,
          filling: 0,
          state: 'stopped',
          warning: 'the disk is full (no space left on device)',
          memoryMiB: 1024,
        }),
      ],
    };
    render(<App api={api} />);
    const section = await screen.findByTestId('pool-section');
    expect(section.textContent).toContain('1536 / 2048 MiB');
    expect(screen.getByTestId('pool-k1').textContent).toContain('sandbox-desk/base:latest');
    expect(screen.getByTestId('pool-count-k1').textContent).toBe('1/2 ready');
    expect(screen.getByTestId('pool-k1').textContent).toContain('1 being made');
    expect(screen.getByTestId('pool-count-k2').textContent).toBe('0/1 ready');
    expect(screen.getByTestId('pool-warning-k2').textContent).toBe('stopped: the disk is full (no space left on device)');
    // The pooled sandboxes are not rows of the user's list.
    expect(screen.getAllByRole('option').map((o) => o.getAttribute('data-testid'))).toEqual(['sandbox-row-alpha']);
  });
});
