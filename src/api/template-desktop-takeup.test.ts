import { describe, expect, it } from 'vitest';
import type { SandboxRun } from '../pool/desktop-handover.js';
import type { ProgressEvent, SandboxEnvironment } from '../sandbox/provider.js';
import type { TemplateDesktop } from '../sandbox/qemu/vm-template-desktop.js';
import type { DesktopStream } from '../desktop/desktop-stream.js';
import { takeUpTemplateDesktop } from './template-desktop-takeup.js';

/** The create's hand-over of a template's running desktop, with fakes at the boundary (the guest command, the stop). */
const env = { getTempDir: () => '/tmp' } as unknown as SandboxEnvironment;
const desktop: TemplateDesktop = {
  sandbox: '.template-ab12cd34',
  user: 'sdesk-display',
  mode: 'isolated',
  display: 20,
  geometry: '1280x800',
  frame: '1280x800',
};

function fakes(run: SandboxRun) {
  const calls = {
    argv: [] as string[][],
    taken: [] as unknown[],
    running: [] as (string | undefined)[],
    stopped: [] as { dir: string; user: string | undefined }[],
    said: [] as ProgressEvent[],
  };
  return {
    calls,
    deps: {
      runAsDesktop: async (argv: string[]) => {
        calls.argv.push(argv);
        return run(argv);
      },
      restoredRunning: (user: string | undefined) => void calls.running.push(user),
      noteTaken: (t: unknown) => void calls.taken.push(t),
      stop: async (_env: SandboxEnvironment, layout: { dir: string }, user: string | undefined) =>
        void calls.stopped.push({ dir: layout.dir, user }),
      say: (e: ProgressEvent) => void calls.said.push(e),
    },
  };
}

describe('takeUpTemplateDesktop (a desktop template copy’s create)', () => {
  it('hands the desktop over in ONE guest command as the desktop’s account, then the desktop service takes it up', async () => {
    const { calls, deps } = fakes(async () => ({ code: 0, output: '0123456789abcdef\n' }));
    expect(await takeUpTemplateDesktop(env, desktop, 'copy1', deps)).toBe(true);
    expect(calls.argv).toHaveLength(1);
    expect(calls.argv[0]!.slice(0, 2)).toEqual(['bash', '-c']);
    expect(calls.argv[0]!.slice(4, 7)).toEqual(['/tmp/sandbox-desk-desktop-.template-ab12cd34', '/tmp/sandbox-desk-desktop-copy1', '20']);
    expect(calls.running).toEqual(['sdesk-display']);
    expect(calls.taken).toEqual([{ ok: true, cookie: '0123456789abcdef' }]);
    expect(calls.stopped).toEqual([]);
    expect(calls.said.at(-1)?.message).toMatch(
      /^the desktop runs since the template \(1280x800\): handed over in [\d.]+ s, no desktop start$/,
    );
  });

  it('a failed hand-over: the desktop is stopped (under both folder names), not taken up, and the create says so', async () => {
    const { calls, deps } = fakes(async () => ({ code: 6, output: 'the new cookie is not accepted\n' }));
    expect(await takeUpTemplateDesktop(env, desktop, 'copy2', deps)).toBe(false);
    expect(calls.running).toEqual([]);
    expect(calls.stopped).toEqual([
      { dir: '/tmp/sandbox-desk-desktop-.template-ab12cd34', user: 'sdesk-display' },
      { dir: '/tmp/sandbox-desk-desktop-copy2', user: 'sdesk-display' },
    ]);
    expect(calls.taken).toHaveLength(1);
    const taken = calls.taken[0] as { ok: boolean; reason: string };
    expect(taken.ok).toBe(false);
    expect(taken.reason).toMatch(/could not give the restored desktop its own X cookie \(exit 6\): the new cookie is not accepted/);
    expect(taken.reason).toMatch(/it is stopped: start one with `sandbox-desk desktop start copy2`$/);
    expect(calls.said).toEqual([{ step: 'desktop', level: 'warning', message: taken.reason }]);
  });

  it('a folder that cannot move (exit 3) or a guest command that throws: the same, saying which', async () => {
    const moved = fakes(async () => ({ code: 3, output: 'the folder did not move\n' }));
    expect(await takeUpTemplateDesktop(env, desktop, 'copy3', moved.deps)).toBe(false);
    expect((moved.calls.taken[0] as { reason: string }).reason).toMatch(
      /folder could not follow the sandbox's new name .*: the folder did not move/,
    );
    expect(moved.calls.stopped).toHaveLength(2);
    const thrown = fakes(async () => {
      throw new Error('ssh: connection reset');
    });
    expect(await takeUpTemplateDesktop(env, desktop, 'copy4', thrown.deps)).toBe(false);
    expect((thrown.calls.taken[0] as { reason: string }).reason).toMatch(/handed over \(ssh: connection reset\); it is stopped/);
    expect(thrown.calls.stopped).toHaveLength(2);
    expect(thrown.calls.running).toEqual([]);
  });

  it('the first screen stream is opened beside the hand-over, at the new socket path, and goes with the desktop (killed if it fails)', async () => {
    for (const ok of [true, false]) {
      let handOverStarted = false;
      const { deps } = fakes(async () => {
        handOverStarted = true;
        return ok ? { code: 0, output: '0123456789abcdef\n' } : { code: 6, output: 'no\n' };
      });
      const killed: boolean[] = [];
      const stream = { kill: () => killed.push(true) } as unknown as DesktopStream;
      const opened: { socket: string; user: string | undefined; before: boolean }[] = [];
      const given: (DesktopStream | undefined)[] = [];
      await takeUpTemplateDesktop(env, desktop, 'copy5', {
        ...deps,
        openAhead: (socket, user) => {
          opened.push({ socket, user, before: !handOverStarted });
          return stream;
        },
        restoredRunning: (_user, ahead) => void given.push(ahead),
      });
      expect(opened).toEqual([{ socket: '/tmp/sandbox-desk-desktop-copy5/rfb.sock', user: 'sdesk-display', before: true }]);
      expect(given).toEqual(ok ? [stream] : []);
      expect(killed).toEqual(ok ? [] : [true]);
    }
  });
});
