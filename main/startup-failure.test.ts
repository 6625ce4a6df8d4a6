import { describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../src/shared/errors.js';
import { reportStartupFailure, STARTUP_FAILED_EXIT, type StartupFailureDeps } from './startup-failure.js';

function fakes(opts: { dialogThrows?: boolean; logFile?: string | null } = {}) {
  const seen = { dialogs: [] as [string, string][], logs: [] as [Record<string, unknown>, string][], exits: [] as number[] };
  const deps: StartupFailureDeps = {
    dialog: {
      showErrorBox: (t, c) => {
        if (opts.dialogThrows) throw new Error('no display');
        seen.dialogs.push([t, c]);
      },
    },
    log: { error: (o, m) => void seen.logs.push([o, m]) },
    logFile: opts.logFile === undefined ? '/x/sandbox-desk.log' : opts.logFile,
    exit: (c) => void seen.exits.push(c),
  };
  return { deps, seen };
}

describe('startup failure', () => {
  it('logs the error with its stack, shows a dialog naming it and the log, and exits non-zero', () => {
    const { deps, seen } = fakes();
    reportStartupFailure(
      new SandboxDeskError('refused', 'state.db was written by a newer Sandbox Desk', { hint: 'run the newer one' }),
      deps,
    );
    expect(seen.logs).toHaveLength(1);
    expect(seen.logs[0]![1]).toBe('the core failed to start');
    expect(seen.logs[0]![0]).toMatchObject({ err: { code: 'refused', message: 'state.db was written by a newer Sandbox Desk' } });
    expect((seen.logs[0]![0].err as { stack: string }).stack).toMatch(/startup-failure\.test/);
    expect(seen.dialogs).toEqual([
      [
        'Sandbox Desk could not start',
        expect.stringMatching(/newer Sandbox Desk.*run the newer one[\s\S]*Details are in the log: \/x\/sandbox-desk\.log/),
      ],
    ]);
    expect(seen.exits).toEqual([STARTUP_FAILED_EXIT]);
    expect(STARTUP_FAILED_EXIT).not.toBe(0);
  });

  it('still exits non-zero when there is no display, and for a thrown non-Error', () => {
    const { deps, seen } = fakes({ dialogThrows: true, logFile: null });
    reportStartupFailure('boom', deps);
    expect(seen.logs[0]![0]).toEqual({ err: { message: 'boom' } });
    expect(seen.exits).toEqual([STARTUP_FAILED_EXIT]);
  });
});
