import '../test/setup.js';
import { act, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OperationView } from '../../../src/api/contract.js';
import { ApiProvider } from '../app/api-context.js';
import { EventsClient } from '../events/events-client.js';
import { EventsProvider } from '../events/events-context.js';
import { TaskList } from './TaskList.js';
import { ApiError } from '../app/api-client.js';
import { FakeApi } from '../test/fake-api.js';
import { FakeEventSocket } from '../test/fake-event-socket.js';

const op = (over: Partial<OperationView> = {}): OperationView => ({
  id: 'op1',
  kind: 'start',
  target: 'vm-1',
  sandbox: 'vm-1',
  state: 'running',
  message: 'waiting for SSH',
  fraction: null,
  error: null,
  startedAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  pid: 1,
  ...over,
});

/** A FakeApi that serves an event stream (a FakeEventSocket), and the client that reads it. */
function liveApi(api: FakeApi, hidden: () => boolean = () => false) {
  api.on('eventsTicket', () => ({ url: 'ws://127.0.0.1:1/ws/events?ticket=t', ticket: 't' }));
  return new EventsClient({ api, WebSocket: FakeEventSocket as unknown as typeof WebSocket, backoff: [10_000], hidden });
}

let clients: EventsClient[] = [];
beforeEach(() => FakeEventSocket.reset());
afterEach(() => {
  for (const c of clients) c.close();
  clients = [];
});

const goLive = async () => {
  await vi.waitFor(() => expect(FakeEventSocket.opened.length).toBe(1));
  act(() => FakeEventSocket.last().hello('e1', 0));
};

describe('TaskList', () => {
  it("the task list shows any process's operations with progress, and notifies when one ends unfocused", async () => {
    const api = new FakeApi();
    api.operations = [op({ id: 'old', kind: 'image-build', target: 'my/img:1', sandbox: null, state: 'succeeded' })];
    const events = liveApi(api);
    clients.push(events);
    const notify = vi.fn();
    let focused = true;
    render(
      <ApiProvider api={api}>
        <EventsProvider events={events}>
          <TaskList focused={() => focused} notify={notify} />
        </EventsProvider>
      </ApiProvider>,
    );
    await goLive();
    fireEvent.click(screen.getByTestId('tasks-toggle'));
    await vi.waitFor(() => expect(screen.getByTestId('task-list').textContent).toContain('Image build of my/img:1'));
    act(() => FakeEventSocket.last().event({ topic: 'operation', operation: op({ fraction: 0.4 }), seq: 1 }));
    expect(screen.getByTestId('tasks-toggle').textContent).toContain('1 running');
    expect(screen.getByTestId('task-op1').textContent).toContain('Boot of vm-1');
    expect(screen.getByTestId('task-op1').querySelector('progress')!.getAttribute('value')).toBe('0.4');
    // Ends while the window has focus: no notification.
    act(() => FakeEventSocket.last().event({ topic: 'operation', operation: op({ state: 'succeeded' }), seq: 2 }));
    expect(notify).not.toHaveBeenCalled();
    // Another one fails while the person is elsewhere: a system notification, with why.
    focused = false;
    act(() =>
      FakeEventSocket.last().event({ topic: 'operation', operation: op({ id: 'op2', kind: 'desktop-start', target: 'box' }), seq: 3 }),
    );
    act(() =>
      FakeEventSocket.last().event({
        topic: 'operation',
        operation: op({ id: 'op2', kind: 'desktop-start', target: 'box', state: 'failed', error: 'Xvnc is missing' }),
        seq: 4,
      }),
    );
    expect(notify).toHaveBeenCalledWith('Desktop start of box failed', 'Xvnc is missing');
    expect(screen.getByTestId('task-op2').getAttribute('data-state')).toBe('failed');
  });

  it('a replay export shows in Tasks: running with its progress; failed with why and what to do, flagged on the closed button until read', async () => {
    const api = new FakeApi();
    const events = liveApi(api);
    clients.push(events);
    render(
      <ApiProvider api={api}>
        <EventsProvider events={events}>
          <TaskList focused={() => true} notify={() => undefined} />
        </EventsProvider>
      </ApiProvider>,
    );
    await goLive();
    const exp = (over: Partial<OperationView>) =>
      op({ id: 'x1', kind: 'replay-export', target: 'box', sandbox: 'box', message: 'screen 30 of 60 s', fraction: 0.5, ...over });
    act(() => FakeEventSocket.last().event({ topic: 'operation', operation: exp({}), seq: 1 }));
    expect(screen.getByTestId('tasks-toggle').textContent).toBe('Tasks (1 running)');
    fireEvent.click(screen.getByTestId('tasks-toggle'));
    expect(screen.getByTestId('task-x1').textContent).toContain('screen 30 of 60 s');
    expect(screen.getByTestId('task-x1').querySelector('progress')!.getAttribute('value')).toBe('0.5');
    fireEvent.click(screen.getByLabelText('Close tasks'));
    const why = 'the range 2026-01-01T00:05:00.000Z – 2026-01-01T00:06:00.000Z is outside the recording of box — give from/to within …';
    act(() => FakeEventSocket.last().event({ topic: 'operation', operation: exp({ state: 'failed', error: why }), seq: 2 }));
    // Closed, the list still says something failed.
    expect(screen.getByTestId('tasks-toggle').textContent).toBe('Tasks (1 failed)');
    expect(screen.getByTestId('tasks-toggle').className).toContain('tasks-failed');
    fireEvent.click(screen.getByTestId('tasks-toggle'));
    const row = screen.getByTestId('task-x1');
    expect(row.getAttribute('data-state')).toBe('failed');
    expect(row.textContent).toContain('Replay export of box');
    expect(row.textContent).toContain(why);
    // Read once: the flag goes; the row stays.
    fireEvent.click(screen.getByLabelText('Close tasks'));
    expect(screen.getByTestId('tasks-toggle').textContent).toBe('Tasks');
  });

  it('a create sent to the background is cancelled from Tasks (cancelOperation by its sandbox); a refusal shows on the task', async () => {
    const api = new FakeApi();
    api.operations = [
      op({ id: 'mk', kind: 'create', target: 'vm-2', sandbox: 'vm-2', message: 'booting' }),
      op({ id: 'img', kind: 'image-build', target: 'my/img:1', sandbox: null }),
      op({ id: 'st', kind: 'start', target: 'vm-3', sandbox: 'vm-3' }),
    ];
    let cancelled: unknown = null;
    api.on('cancelOperation', (p) => {
      cancelled = p;
      return { kind: 'create', startedAt: '', events: [], done: false, error: null, cancellable: true, cancelled: true };
    });
    render(
      <ApiProvider api={api}>
        <TaskList focused={() => true} notify={() => undefined} />
      </ApiProvider>,
    );
    fireEvent.click(screen.getByTestId('tasks-toggle'));
    await screen.findByTestId('task-mk');
    expect(screen.queryByTestId('task-cancel-img')).toBeNull(); // no cancel in the contract for a build
    fireEvent.click(screen.getByTestId('task-cancel-mk'));
    await vi.waitFor(() => expect(cancelled).toEqual({ name: 'vm-2' }));

    api.on('cancelOperation', () => {
      throw new ApiError('refused', 'nothing to cancel: no create or start of sandbox vm-3 is running');
    });
    expect(screen.getByTestId('task-cancel-mk').textContent).toBe('Cancelling…');
    fireEvent.click(screen.getByTestId('task-cancel-st'));
    expect((await screen.findByRole('alert')).textContent).toMatch(/nothing to cancel/);
  });

  it('closes with Escape and with a click outside; the keyboard goes back to the Tasks button', async () => {
    const api = new FakeApi();
    render(
      <ApiProvider api={api}>
        <button data-testid="elsewhere">a tab</button>
        <TaskList focused={() => true} notify={() => undefined} />
      </ApiProvider>,
    );
    fireEvent.click(screen.getByTestId('tasks-toggle'));
    expect(screen.getByTestId('task-list')).toBeTruthy();
    fireEvent.keyDown(document.activeElement ?? document.body, { key: 'Escape' });
    expect(screen.queryByTestId('task-list')).toBeNull();
    expect(document.activeElement).toBe(screen.getByTestId('tasks-toggle'));
    fireEvent.click(screen.getByTestId('tasks-toggle'));
    fireEvent.mouseDown(screen.getByTestId('task-list'));
    expect(screen.getByTestId('task-list')).toBeTruthy(); // a click inside keeps it
    fireEvent.mouseDown(screen.getByTestId('elsewhere'));
    expect(screen.queryByTestId('task-list')).toBeNull();
  });
});
