import '../test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import type { SandboxOperation } from '../../../src/api/contract.js';
import { ApiProvider } from '../app/api-context.js';
import { OperationProgress } from './OperationProgress.js';
import { FakeApi } from '../test/fake-api.js';

const booting = (over: Partial<SandboxOperation> = {}): SandboxOperation => ({
  kind: 'create',
  startedAt: '2026-01-01T00:00:00.000Z',
  events: [
    { step: 'disk', message: 'creating a copy-on-write overlay', level: 'info', at: '2026-01-01T00:00:00.400Z' },
    { step: 'process', message: 'QEMU is running (pid 42, TCG)', level: 'info', at: '2026-01-01T00:00:03.200Z' },
  ],
  done: false,
  error: null,
  cancellable: true,
  cancelled: false,
  ...over,
});

describe('OperationProgress', () => {
  it('lists every step with its time since the start, as the CLI prints them', async () => {
    const api = new FakeApi().on('sandboxProgress', () => booting());
    render(
      <ApiProvider api={api}>
        <OperationProgress sandbox="vm" onBackground={() => undefined} />
      </ApiProvider>,
    );
    const panel = await screen.findByTestId('operation-progress');
    expect(panel.textContent).toMatch(/Creating vm/);
    expect(panel.textContent).toMatch(/0\.4 s disk: creating a copy-on-write overlay/);
    expect(panel.textContent).toMatch(/3\.2 s process: QEMU is running/);
  });

  it('Cancel asks the core to cancel; Continue in background hands the work to the sidebar', async () => {
    let op = booting();
    const onBackground = vi.fn();
    const api = new FakeApi().on('sandboxProgress', () => op).on('cancelOperation', () => (op = booting({ cancelled: true })));
    render(
      <ApiProvider api={api}>
        <OperationProgress sandbox="vm" onBackground={onBackground} />
      </ApiProvider>,
    );
    fireEvent.click(await screen.findByTestId('operation-cancel'));
    await waitFor(() => expect(api.callsOf('cancelOperation')).toEqual([{ name: 'vm' }]));
    expect(await screen.findByText(/Cancelling vm/)).toBeTruthy();
    fireEvent.click(screen.getByTestId('operation-background'));
    expect(onBackground).toHaveBeenCalled();
  });

  it('a stop has no Cancel, and nothing shows once the work is done', async () => {
    let op = booting({ kind: 'stop', cancellable: false });
    const api = new FakeApi().on('sandboxProgress', () => op);
    const { container } = render(
      <ApiProvider api={api}>
        <OperationProgress sandbox="vm" onBackground={() => undefined} />
      </ApiProvider>,
    );
    expect((await screen.findByTestId('operation-progress')).textContent).toMatch(/Stopping vm/);
    expect(screen.queryByTestId('operation-cancel')).toBeNull();
    op = { ...op, done: true };
    await waitFor(() => expect(container.querySelector('[data-testid="operation-progress"]')).toBeNull(), { timeout: 3000 });
  });
});
