import '../test/setup.js';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { LogsView } from './LogsView.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';

/** A WebSocket stand-in the test drives: the latest one opened is `sockets.at(-1)`. */
class FakeSocket extends EventTarget {
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: string }) => void) | null = null;
  onclose: ((e: { code: number; reason: string }) => void) | null = null;
  closed = false;
  constructor(readonly url: string) {
    super();
    sockets.push(this);
  }
  close() {
    this.closed = true;
  }
  emit(text: string) {
    act(() => this.onmessage?.({ data: text }));
  }
}
let sockets: FakeSocket[] = [];

beforeEach(() => {
  sockets = [];
  vi.stubGlobal('WebSocket', FakeSocket);
});

function renderLogs(api: FakeApi) {
  return render(
    <ApiProvider api={api}>
      <LogsView sandbox="alpha" visible />
    </ApiProvider>,
  );
}

describe('Logs tab', () => {
  it('follows the first source that exists over a ticket, and shows new lines', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    renderLogs(api);
    await waitFor(() => expect(sockets.length).toBe(1));
    expect(api.callsOf('logTicket')).toEqual([{ sandbox: 'alpha', source: 'container', tail: 500 }]);
    act(() => sockets[0]!.onopen?.());
    expect(screen.getByTestId('logs-state').textContent).toBe('following');
    sockets[0]!.emit('boot ok\n');
    sockets[0]!.emit('error: disk\nerror: net\n');
    expect(screen.getByTestId('logs-text').textContent).toBe('boot ok\nerror: disk\nerror: net\n');
    // A source that does not exist is offered, but cannot be picked.
    const desktop = screen.getByRole('option', { name: /Desktop launcher \(not there\)/ });
    expect((desktop as HTMLOptionElement).disabled).toBe(true);
  });

  it('searches with highlights and next/previous, wrapping', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    renderLogs(api);
    await waitFor(() => expect(sockets.length).toBe(1));
    sockets[0]!.emit('error one\nok\nERROR two\n');
    fireEvent.change(screen.getByTestId('logs-search'), { target: { value: 'error' } });
    expect(document.querySelectorAll('mark.hit')).toHaveLength(2);
    expect(screen.getByTestId('logs-matches').textContent).toBe('0/2');
    fireEvent.click(screen.getByTestId('logs-next'));
    expect(screen.getByTestId('logs-matches').textContent).toBe('1/2');
    expect(document.querySelector('mark.hit-current')!.textContent).toBe('error');
    fireEvent.keyDown(screen.getByTestId('logs-search'), { key: 'Enter' });
    expect(document.querySelector('mark.hit-current')!.textContent).toBe('ERROR');
    fireEvent.click(screen.getByTestId('logs-next'));
    expect(screen.getByTestId('logs-matches').textContent).toBe('1/2');
    fireEvent.click(screen.getByTestId('logs-prev'));
    expect(screen.getByTestId('logs-matches').textContent).toBe('2/2');
  });

  it('copies what it shows', async () => {
    const writeText = vi.fn(() => Promise.resolve());
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    renderLogs(api);
    await waitFor(() => expect(sockets.length).toBe(1));
    sockets[0]!.emit('a\nb\n');
    fireEvent.click(screen.getByTestId('logs-copy'));
    await screen.findByText(/Copied 2 lines/);
    expect(writeText).toHaveBeenCalledWith('a\nb\n');
  });

  it('reads a snapshot when not following, and says why a source cannot be read', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    api.logText = 'snap 1\nsnap 2\n';
    renderLogs(api);
    await waitFor(() => expect(sockets.length).toBe(1));
    fireEvent.click(screen.getByTestId('logs-follow'));
    await waitFor(() => expect(screen.getByTestId('logs-text').textContent).toBe('snap 1\nsnap 2\n'));
    expect(sockets[0]!.closed).toBe(true);
    expect(screen.getByTestId('logs-state').textContent).toBe('snapshot');
    api.fail('readLog', 'not_found', 'log source app of sandbox alpha does not exist: gone', 'sources that exist: container');
    fireEvent.change(screen.getByTestId('logs-source'), { target: { value: 'app' } });
    expect((await screen.findByTestId('logs-error')).textContent).toMatch(/does not exist: gone.*sources that exist: container/);
  });

  it('shows the end of a follow', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] });
    renderLogs(api);
    await waitFor(() => expect(sockets.length).toBe(1));
    act(() => sockets[0]!.onclose?.({ code: 1000, reason: 'log ended' }));
    expect(screen.getByTestId('logs-state').textContent).toBe('ended');
    expect(screen.getByTestId('logs-state').title).toBe('log ended');
  });
});
