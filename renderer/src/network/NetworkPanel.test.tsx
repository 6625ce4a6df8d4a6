import '../test/setup.js';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { callAt, callOf, NetworkPanel } from './NetworkPanel.js';
import { callLogEntry, FakeApi, sandboxInfo } from '../test/fake-api.js';

function setup() {
  const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'box', state: 'running', network: { mode: 'allow', allow: ['pypi.org'] } })] });
  const now = Date.now();
  api.networkLogEntries = [
    {
      at: new Date(now - 3000).toISOString(),
      sandbox: 'box',
      host: 'pypi.org',
      port: 443,
      verdict: 'allowed',
      kind: 'connect',
      reason: null,
      process: null,
    },
    {
      at: new Date(now - 2000).toISOString(),
      sandbox: 'box',
      host: 'evil.example',
      port: 443,
      verdict: 'denied',
      kind: 'connect',
      reason: 'not on the allow list',
      process: null,
    },
  ];
  render(
    <ApiProvider api={api}>
      <NetworkPanel sandbox="box" visible />
    </ApiProvider>,
  );
  return api;
}

describe('the Network panel', () => {
  it('shows the mode, the allow list and the log newest first, a denied line with "Allow this host"', async () => {
    setup();
    const rows = await screen.findAllByTestId('network-row');
    expect(rows.map((r) => within(r).getAllByRole('cell')[2]!.textContent)).toEqual(['evil.example', 'pypi.org']);
    expect(screen.getByTestId<HTMLSelectElement>('network-mode').value).toBe('allow');
    expect(screen.getByTestId('network-entry-pypi.org')).toBeTruthy();
    expect(within(rows[0]!).getByTestId('network-allow-host')).toBeTruthy();
    expect(within(rows[1]!).queryByTestId('network-allow-host')).toBeNull();
  });

  it('filters the log: denied only, by process, by host; says how many of how many match', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'box', state: 'running', network: { mode: 'allow', allow: [] } })] });
    const line = (host: string, verdict: 'allowed' | 'denied', process: string | null) => ({
      at: new Date().toISOString(),
      sandbox: 'box',
      host,
      port: 443,
      verdict,
      kind: 'connect' as const,
      reason: verdict === 'denied' ? 'not on the allow list' : null,
      process,
    });
    api.networkLogEntries = [
      line('pypi.org', 'allowed', 'pip (pid 9): pip install'),
      line('clients2.google.com', 'denied', 'chromium (pid 186)'),
      line('api.github.com', 'denied', 'curl (pid 40): curl https://api.github.com'),
    ];
    render(
      <ApiProvider api={api}>
        <NetworkPanel sandbox="box" visible />
      </ApiProvider>,
    );
    const hosts = () => screen.queryAllByTestId('network-row').map((r) => within(r).getAllByRole('cell')[2]!.textContent);
    await waitFor(() => expect(hosts()).toHaveLength(3));
    fireEvent.click(screen.getByTestId('network-filter-denied'));
    expect(hosts()).toEqual(['api.github.com', 'clients2.google.com']);
    fireEvent.change(screen.getByTestId('network-filter-process'), { target: { value: 'Curl' } });
    expect(hosts()).toEqual(['api.github.com']);
    expect(screen.getByTestId('network-filter-count').textContent).toMatch(/1 of 3/);
    fireEvent.change(screen.getByTestId('network-filter-process'), { target: { value: '' } });
    fireEvent.change(screen.getByTestId('network-filter-host'), { target: { value: 'google' } });
    expect(hosts()).toEqual(['clients2.google.com']);
    fireEvent.change(screen.getByTestId('network-filter-host'), { target: { value: 'nowhere' } });
    expect(hosts()).toEqual([]);
    expect(screen.getByTestId('network-filter-empty')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Clear' }));
    expect(hosts()).toHaveLength(3);
  });

  it('"Allow this host" adds host:port to the list', async () => {
    const api = setup();
    fireEvent.click(await screen.findByTestId('network-allow-host'));
    await waitFor(() => expect(api.sandboxes[0]!.network?.allow).toEqual(['pypi.org', 'evil.example:443']));
    await waitFor(() => expect(screen.getByTestId('network-entry-evil.example:443')).toBeTruthy());
  });

  it('a bad entry is refused in the form with what was wrong', async () => {
    setup();
    const input = await screen.findByTestId('network-add');
    fireEvent.change(input, { target: { value: 'foo.*.com' } });
    expect(screen.getByText(/wildcard may only be the whole leftmost label/)).toBeTruthy();
    expect(screen.getByRole<HTMLButtonElement>('button', { name: 'Allow' }).disabled).toBe(true);
  });

  it('the mode changes from the select', async () => {
    const api = setup();
    fireEvent.change(await screen.findByTestId('network-mode'), { target: { value: 'offline' } });
    await waitFor(() => expect(api.sandboxes[0]!.network?.mode).toBe('offline'));
  });

  it('links a connection to the agent call whose time window holds it', () => {
    const calls = [callLogEntry({ id: 7, at: '2026-01-01T00:00:00.000Z', durationMs: 2000, tool: 'execute_shell_command' })];
    expect(callAt(calls, '2026-01-01T00:00:01.000Z')?.id).toBe(7);
    expect(callAt(calls, '2026-01-01T00:00:05.000Z')).toBeNull();
  });

  it('a linked line names its call by id; a known process that was no call’s command gets none; an unknown one falls back to time', () => {
    const calls = [callLogEntry({ id: 7, at: '2026-01-01T00:00:00.000Z', durationMs: 2000, tool: 'execute_shell_command' })];
    const base = {
      sandbox: 'box',
      host: 'a',
      port: 80,
      verdict: 'allowed' as const,
      kind: 'http' as const,
      reason: null,
      at: '2026-01-01T00:00:01.000Z',
    };
    expect(callOf(calls, { ...base, process: 'bash (pid 4)', pid: 4, callId: 7 })).toEqual({ call: calls[0], by: 'link' });
    expect(callOf(calls, { ...base, process: 'chromium (pid 9)', pid: 9 })).toBeNull();
    expect(callOf(calls, { ...base, process: null })).toEqual({ call: calls[0], by: 'time' });
  });

  it('shows the process and the call on a linked line', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'box', state: 'running', network: { mode: 'allow', allow: ['a'] } })] });
    const at = new Date().toISOString();
    api.callLogEntries = [
      callLogEntry({
        id: 3,
        sandbox: 'box',
        at: new Date(Date.now() - 1000).toISOString(),
        durationMs: 5000,
        tool: 'execute_shell_command',
      }),
    ];
    api.networkLogEntries = [
      {
        at,
        sandbox: 'box',
        host: 'a',
        port: 80,
        verdict: 'allowed',
        kind: 'http',
        reason: null,
        process: 'bash (pid 41): bash -c x',
        pid: 41,
        ancestry: [40],
        callId: 3,
      },
    ];
    render(
      <ApiProvider api={api}>
        <NetworkPanel sandbox="box" visible />
      </ApiProvider>,
    );
    expect((await screen.findByTestId('network-process')).textContent).toContain('bash (pid 41)');
    expect((await screen.findByTestId('network-call')).textContent).toContain('call #3 execute_shell_command');
  });
});
