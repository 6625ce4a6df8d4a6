import '../test/setup.js';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CallLogEntry } from '../../../src/api/contract.js';
import { ApiProvider } from '../app/api-context.js';
import { duration, toJsonl } from './CallLog.js';
import { SandboxDetails } from './SandboxDetails.js';
import { callLogEntry, FakeApi, sandboxInfo, sessionInfo } from '../test/fake-api.js';

function renderDetails(api: FakeApi, sandbox = api.sandboxes[0]!) {
  return render(
    <ApiProvider api={api}>
      <SandboxDetails sandbox={sandbox} visible onOpenTerminal={() => undefined} />
    </ApiProvider>,
  );
}

const secondsAgo = (s: number) => new Date(Date.now() - s * 1000).toISOString();

/** A small, believable log: oldest first, as the server returns it. */
function seededLog(): CallLogEntry[] {
  return [
    callLogEntry({
      id: 1,
      at: secondsAgo(50),
      session: 'agent-a',
      tool: 'execute_shell_command',
      cwdUsed: '/work/repo',
      cwdObserved: '/work/repo/src',
      exitCode: 0,
      durationMs: 1530,
    }),
    callLogEntry({
      id: 2,
      at: secondsAgo(40),
      session: 'agent-a',
      tool: 'read_file',
      cwdUsed: '/work/repo/src',
      cwdObserved: null,
      exitCode: null,
      durationMs: 12,
    }),
    callLogEntry({
      id: 3,
      at: secondsAgo(30),
      session: 'agent-b',
      tool: 'execute_shell_command',
      cwdUsed: '/work',
      cwdObserved: null,
      exitCode: 124,
      warnings: [{ code: 'cwd_unobserved', message: 'the command timed out' }],
      durationMs: 30_000,
    }),
    callLogEntry({
      id: 4,
      at: secondsAgo(20),
      session: 'agent-b',
      tool: 'execute_shell_command',
      cwdUsed: null,
      cwdObserved: null,
      exitCode: null,
      error: 'cwd_unresolved: step s7 has no working directory',
      durationMs: 3,
    }),
    callLogEntry({
      id: 5,
      at: secondsAgo(10),
      session: null,
      tool: 'click',
      cwdUsed: null,
      cwdObserved: null,
      exitCode: null,
      error: "human_has_control: a human holds the control lease of sandbox alpha's desktop",
      durationMs: 4,
    }),
    callLogEntry({ id: 6, at: secondsAgo(5), sandbox: 'other', session: 'agent-a', tool: 'list_dir' }),
  ];
}

function alphaApi(callLog: CallLogEntry[] = seededLog()): FakeApi {
  return new FakeApi({
    sandboxes: [sandboxInfo({ name: 'alpha' })],
    sessions: { alpha: [sessionInfo({ key: 'agent-a', cwd: '/work/repo/src' }), sessionInfo({ key: 'agent-b', cwd: '/work' })] },
    callLog,
  });
}

// jsdom has no object URLs; the export test installs its own and this puts things back.
// eslint-disable-next-line @typescript-eslint/unbound-method -- static functions, saved only to be put back
const objectUrls = { createObjectURL: URL.createObjectURL, revokeObjectURL: URL.revokeObjectURL };

afterEach(() => {
  Object.assign(URL, objectUrls);
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('agent calls', () => {
  it("lists this sandbox's calls newest first: tool, session, cwd used → observed, result, warnings, duration", async () => {
    const api = alphaApi();
    renderDetails(api);
    const table = await screen.findByTestId('calls-table');
    expect(api.callsOf('callLog')[0]).toEqual({ sandbox: 'alpha', limit: 50 });

    const rows = within(table).getAllByTestId(/^call-row-/);
    expect(rows.map((r) => r.dataset.testid)).toEqual(['call-row-5', 'call-row-4', 'call-row-3', 'call-row-2', 'call-row-1']); // not the other sandbox's 6

    const moved = screen.getByTestId('call-row-1');
    expect(moved.textContent).toContain('execute_shell_command');
    expect(moved.textContent).toContain('agent-a');
    expect(screen.getByTestId('call-cwd-1').textContent).toBe('/work/repo → /work/repo/src');
    expect(screen.getByTestId('call-result-1').textContent).toBe('exit 0');
    expect(moved.textContent).toContain('1.5 s');
    expect(moved.textContent).toMatch(/\d+ s ago/);
    expect(moved.querySelector('td[title]')?.getAttribute('title')).toBe(api.callLogEntries[0]!.at); // full ISO on hover

    // A file call has no command to observe: just where it was anchored.
    expect(screen.getByTestId('call-cwd-2').textContent).toBe('/work/repo/src');
    expect(screen.getByTestId('call-row-2').textContent).toContain('read_file');
    expect(screen.getByTestId('call-result-2').textContent).toBe('ok');

    // A command that timed out: its cwd was not observed, and the warning says so in words.
    expect(screen.getByTestId('call-cwd-3').textContent).toBe('/work → not observed');
    expect(screen.getByTestId('call-result-3').textContent).toBe('exit 124');
    expect(screen.getByTestId('call-row-3').textContent).toContain('not observed (interrupted)');
    expect(screen.getByTestId('call-row-3').textContent).toContain('30.0 s');

    // Refusals: the error, in red; nothing ran, so no cwd.
    const refused = screen.getByTestId('call-result-4');
    expect(refused.textContent).toBe('cwd_unresolved: step s7 has no working directory');
    expect(refused.querySelector('.text-bad')).not.toBeNull();
    expect(screen.getByTestId('call-cwd-4').textContent).toBe('—');
    expect(screen.getByTestId('call-result-5').textContent).toContain('human_has_control: a human holds the control lease');
    expect(screen.getByTestId('call-row-5').textContent).toContain('click');
  });

  it('a call with connections says how many, and how many were denied', async () => {
    const conn = { sandbox: 'alpha', port: 8000, kind: 'http' as const, reason: null, process: 'bash (pid 4)', at: secondsAgo(1) };
    const api = alphaApi([
      callLogEntry({
        id: 9,
        sandbox: 'alpha',
        at: secondsAgo(2),
        connections: [
          { ...conn, host: 'a', verdict: 'allowed', linkedBy: 'process' },
          { ...conn, host: 'b', verdict: 'denied', linkedBy: 'process' },
        ],
      }),
    ]);
    renderDetails(api);
    const badge = await screen.findByTestId('call-connections-9');
    expect(badge.textContent).toBe('2 connections (1 denied)');
    expect(badge.title).toContain('denied b:8000 — bash (pid 4) (process)');
  });

  it('says how to connect an agent when there are no calls', async () => {
    const api = alphaApi([callLogEntry({ sandbox: 'other' })]);
    renderDetails(api);
    const empty = await screen.findByTestId('calls-empty');
    expect(empty.textContent).toBe('No agent calls yet. Connect an agent with sandbox-desk mcp (see README).');
    expect(screen.queryByTestId('calls-table')).toBeNull();
    expect(screen.getByTestId<HTMLButtonElement>('calls-export').disabled).toBe(true);
  });

  it('exports the shown calls as JSON lines, oldest first, named after the sandbox', async () => {
    const blobs: Blob[] = [];
    const create = vi.fn((b: Blob) => {
      blobs.push(b);
      return 'blob:calls-1';
    });
    const revoke = vi.fn();
    Object.assign(URL, { createObjectURL: create, revokeObjectURL: revoke });
    let clicked: { href: string; download: string } | null = null;
    vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      clicked = { href: this.getAttribute('href')!, download: this.download };
    });

    const api = alphaApi();
    renderDetails(api);
    await screen.findByTestId('calls-table');
    fireEvent.click(screen.getByTestId('calls-export'));

    expect(create).toHaveBeenCalledTimes(1);
    expect(clicked).toEqual({ href: 'blob:calls-1', download: 'sandbox-desk-calls-alpha.jsonl' });
    expect(blobs[0]!.type).toBe('application/x-ndjson');
    const text = await blobs[0]!.text();
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    const parsed = lines.map((l) => JSON.parse(l) as CallLogEntry);
    expect(parsed.map((e) => e.id)).toEqual([1, 2, 3, 4, 5]);
    expect(parsed[3]).toEqual(api.callLogEntries[3]);
    expect(document.querySelector('a[download]')).toBeNull(); // the temporary link is gone
    await waitFor(() => expect(revoke).toHaveBeenCalledWith('blob:calls-1'));
  });

  it('filters by session from the select or by clicking a session row', async () => {
    const api = alphaApi();
    renderDetails(api);
    await screen.findByTestId('call-row-5');

    fireEvent.click(screen.getByTestId('session-row-agent-b'));
    // The filtered rows replace the old ones when the filtered answer arrives (between, the list may be empty).
    await waitFor(() => expect(screen.queryAllByTestId(/^call-row-/).map((r) => r.dataset.testid)).toEqual(['call-row-4', 'call-row-3']));
    expect(api.callsOf('callLog').at(-1)).toEqual({ sandbox: 'alpha', session: 'agent-b', limit: 50 });
    expect(screen.getByTestId('session-row-agent-b').className).toContain('row-selected');
    expect(screen.getByTestId<HTMLSelectElement>('calls-session-filter').value).toBe('agent-b');

    // Clicking the picked row again shows every session.
    fireEvent.click(screen.getByTestId('session-row-agent-b'));
    await screen.findByTestId('call-row-1');
    expect(screen.getByTestId('session-row-agent-b').className).not.toContain('row-selected');

    fireEvent.change(screen.getByTestId('calls-session-filter'), { target: { value: 'agent-a' } });
    await waitFor(() => expect(screen.getAllByTestId(/^call-row-/).map((r) => r.dataset.testid)).toEqual(['call-row-2', 'call-row-1']));
  });

  it('polls every 2 s and shows new calls as they arrive', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    const api = alphaApi([]);
    renderDetails(api);
    await screen.findByTestId('calls-empty');
    api.callLogEntries.push(callLogEntry({ id: 42, sandbox: 'alpha', tool: 'write_file', cwdObserved: null, exitCode: null }));
    await act(async () => {
      await vi.advanceTimersByTimeAsync(2100);
    });
    await screen.findByTestId('call-row-42');
    expect(screen.getByTestId('call-row-42').textContent).toContain('write_file');
  });

  it('formats durations and JSON lines', () => {
    expect(duration(null)).toBe('—');
    expect(duration(42)).toBe('42 ms');
    expect(duration(1530)).toBe('1.5 s');
    expect(duration(125_000)).toBe('2 min 5 s');
    expect(toJsonl([])).toBe('');
    expect(toJsonl([callLogEntry({ id: 9 })]).endsWith('}\n')).toBe(true);
  });
});
