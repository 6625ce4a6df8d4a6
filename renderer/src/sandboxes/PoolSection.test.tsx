import '../test/setup.js';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
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
    // Each pool's state in words, not only in a colour.
    expect(screen.getByTestId('pool-state-k1').textContent).toBe('filling · 1 being made');
    expect(screen.getByTestId('pool-state-k2').textContent).toBe('stopped');
    expect(screen.getByTestId('pool-count-k2').className).toContain('state-pool-stopped');
    expect(screen.queryByTestId('pool-not-refilling')).toBeNull();
    // The pooled sandboxes are not rows of the user's list.
    // (Within the list: a select's options elsewhere in the window are options too.)
    const rows = within(screen.getByRole('listbox', { name: 'Sandboxes' })).getAllByRole('option');
    expect(rows.map((o) => o.getAttribute('data-testid'))).toEqual(['sandbox-row-alpha']);
  });

  it('a full pool, a retrying one with its warning; a process that does not refill says so', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    api.pools = {
      memoryBudgetMiB: 2048,
      memoryMiB: 512,
      refilling: false,
      pools: [
        pool({ filling: 0, ready: 2, state: 'full' }),
        pool({ key: 'k3', filling: 0, ready: 0, state: 'retrying', warning: 'the last refill failed: image not found' }),
      ],
    };
    render(<App api={api} />);
    await screen.findByTestId('pool-section');
    expect(screen.getByTestId('pool-state-k1').textContent).toBe('full');
    expect(screen.getByTestId('pool-count-k1').className).toContain('state-pool-full');
    expect(screen.getByTestId('pool-state-k3').textContent).toBe('retrying');
    expect(screen.getByTestId('pool-warning-k3').textContent).toBe('the last refill failed: image not found');
    expect(screen.getByTestId('pool-not-refilling').textContent).toMatch(/the service refills/);
  });
});

describe('a create from the window says whether it started warm', () => {
  const createFrom = async (api: FakeApi, result: Record<string, unknown>) => {
    api.on('createSandbox', (p) => {
      const s = sandboxInfo({ name: p.name });
      api.sandboxes.push(s);
      return { sandbox: s, warnings: [], ...result };
    });
    render(<App api={api} />);
    await screen.findByTestId('sandbox-row-alpha');
    // The window has read the pools before the person creates (the section is their answer).
    if (api.pools.pools.length > 0) await screen.findByTestId('pool-section');
    fireEvent.click(screen.getByTestId('create-sandbox'));
    fireEvent.change(await screen.findByTestId('create-name'), { target: { value: 'beta' } });
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(screen.getByTestId('sandbox-row-beta').getAttribute('aria-selected')).toBe('true'));
    return screen.getByTestId('notice').textContent ?? '';
  };
  const withPool = () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    api.pools = { memoryBudgetMiB: 2048, memoryMiB: 512, refilling: true, pools: [pool({ ready: 1, filling: 0, state: 'full' })] };
    return api;
  };

  it('claimed from a pool: the notice names the pool', async () => {
    const api = withPool();
    const text = await createFrom(api, { warm: true, warmPool: 'sandbox-desk/base:latest' });
    expect(text).toContain('Created beta warm from the pool of sandbox-desk/base:latest.');
  });

  it('made cold while pools are set up: the notice says why', async () => {
    const api = withPool();
    const text = await createFrom(api, { warm: false, warmReason: 'host mounts (--mount) are bound when a container is made' });
    expect(text).toContain('Created beta cold (host mounts (--mount) are bound when a container is made).');
  });

  it('with no pool (the default) a cold create is just created', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    const text = await createFrom(api, { warm: false, warmReason: 'no warm pool is configured (see `sandbox-desk pool set`)' });
    expect(text).toMatch(/^Created beta\.\s*×?$/);
  });
});
