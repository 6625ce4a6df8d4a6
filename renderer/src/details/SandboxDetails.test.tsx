import '../test/setup.js';
import { render, screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { SandboxDetails } from './SandboxDetails.js';
import { FakeApi, sandboxInfo, sessionInfo } from '../test/fake-api.js';

function renderDetails(api: FakeApi, sandbox = api.sandboxes[0]!) {
  return render(
    <ApiProvider api={api}>
      <SandboxDetails sandbox={sandbox} visible onOpenTerminal={() => undefined} />
    </ApiProvider>,
  );
}

describe('sandbox details', () => {
  it('shows the three cwd layers: each session record, the last observed cwd, the default', async () => {
    const sb = sandboxInfo({
      name: 'alpha',
      home: '/home/dev',
      defaultCwd: '/home/dev',
      declaredDefaultCwd: '~',
      lastObservedCwd: '/srv/app',
    });
    const api = new FakeApi({
      sandboxes: [sb],
      sessions: {
        alpha: [
          sessionInfo({ key: 'agent-a', cwd: '/work/repo', source: 'observed', observedAt: new Date(Date.now() - 5000).toISOString() }),
          sessionInfo({ key: 'agent-b', parent: 'agent-a', cwd: null }),
        ],
      },
    });
    renderDetails(api);
    expect(screen.getByTestId('details-home').textContent).toBe('/home/dev');
    expect(screen.getByTestId('details-default-cwd').textContent).toContain('/home/dev');
    expect(screen.getByTestId('details-default-cwd').textContent).toContain('~');
    expect(screen.getByTestId('details-last-observed').textContent).toBe('/srv/app');

    const a = await screen.findByTestId('session-row-agent-a');
    expect(within(a).getByTestId('session-cwd-agent-a').textContent).toBe('/work/repo');
    expect(a.textContent).toContain('/srv/app'); // layer b, side by side
    expect(a.textContent).toContain('observed');
    expect(a.textContent).toMatch(/\d+ s ago/);
    const b = screen.getByTestId('session-row-agent-b');
    expect(within(b).getByTestId('session-cwd-agent-b').textContent).toBe('no record');
    expect(b.textContent).toContain('agent-a'); // parent
    // The layer each session's next command starts from is marked.
    expect(within(a).getByTestId('session-cwd-agent-a').className).toContain('layer-active');
    expect(within(b).getByTestId('session-cwd-agent-b').className).not.toContain('layer-active');
  });

  it('says the home is resolved after connecting when it is not measured yet', () => {
    const api = new FakeApi({
      sandboxes: [sandboxInfo({ name: 'fresh', home: null, defaultCwd: null, tempDir: null, lastObservedCwd: null })],
    });
    renderDetails(api);
    expect(screen.getByTestId('details-home').textContent).toBe('resolved after connect');
    expect(screen.getByTestId('details-default-cwd').textContent).toMatch(/resolved after connect.*declared ~/);
    expect(screen.getByTestId('details-last-observed').textContent).toBe('nothing observed yet');
  });

  it("shows the last command's warnings in words", async () => {
    const api = new FakeApi({
      sandboxes: [sandboxInfo({ name: 'alpha' })],
      sessions: {
        alpha: [
          sessionInfo({
            key: 's1',
            cwd: '/work',
            lastWarnings: [
              { code: 'cwd_missing', message: '/work/gone does not exist; ran in /work', asked: '/work/gone', used: '/work' },
              { code: 'cwd_unobserved', message: 'the command timed out' },
            ],
          }),
          sessionInfo({ key: 's2', cwd: '/root', lastWarnings: [{ code: 'cwd_denied', message: 'permission denied' }] }),
          sessionInfo({
            key: 's3',
            cwd: null,
            lastWarnings: [{ code: 'host_path_dropped', message: 'a host path was dropped', asked: '/Users/me/x' }],
          }),
        ],
      },
    });
    renderDetails(api);
    const w1 = await screen.findByTestId('session-warnings-s1');
    expect(w1.textContent).toContain('missing on disk');
    expect(w1.textContent).toContain('/work/gone');
    expect(w1.textContent).toContain('not observed (interrupted)');
    expect(w1.querySelector('[data-code="cwd_missing"]')?.getAttribute('title')).toContain('/work/gone → /work');
    expect(screen.getByTestId('session-warnings-s2').textContent).toContain('not accessible');
    expect(screen.getByTestId('session-warnings-s3').textContent).toContain('host path dropped');
  });

  it('says what to do when there are no sessions', async () => {
    renderDetails(new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha' })] }));
    expect(await screen.findByText(/No sessions yet/)).toBeTruthy();
  });

  it('says a VM is a virtual machine (not a container), and shows docker limits as the engine holds them', () => {
    const vm = sandboxInfo({ name: 'vm1', backend: 'qemu', isolation: 'virtual-machine', details: { accel: 'tcg' } });
    renderDetails(new FakeApi({ sandboxes: [vm] }));
    const text = document.body.textContent ?? '';
    expect(text).toContain('Isolationvirtual machine — host paths do not exist inside');
    expect(text).not.toMatch(/Container/);
    expect(screen.queryByTestId('details-limits')).toBeNull();
  });

  it('shows docker CPU and memory limits', () => {
    const c = sandboxInfo({ name: 'c1', details: { cpus: 1.5, memoryMiB: 512 } });
    renderDetails(new FakeApi({ sandboxes: [c] }));
    expect(screen.getByTestId('details-limits').textContent).toBe('CPUs 1.5 · memory 512 MiB');
  });

  it('shows the default cwd as the user typed it, with its status', () => {
    const api = new FakeApi({
      sandboxes: [
        sandboxInfo({ name: 'typed', defaultCwdStatus: { typed: '~', state: 'resolved', text: '~ → /home/dev (resolved)' } }),
        sandboxInfo({
          name: 'ignored',
          defaultCwdStatus: {
            typed: '/Users/me',
            state: 'ignored',
            text: '/Users/me — ignored: not usable inside this sandbox; using /home/dev',
          },
        }),
      ],
    });
    const { unmount } = renderDetails(api);
    expect(screen.getByTestId('details-typed-cwd').textContent).toBe('~ → /home/dev (resolved)');
    unmount();
    renderDetails(api, api.sandboxes[1]);
    const ignored = screen.getByTestId('details-typed-cwd');
    expect(ignored.textContent).toMatch(/^\/Users\/me — ignored/);
    expect(ignored.className).toContain('text-warn');
  });
});
