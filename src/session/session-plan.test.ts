import { describe, expect, it } from 'vitest';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import type { SandboxRecord } from '../store/sandbox-store.js';
import { planSession, resolvedDefault, sandboxRoots } from './session-plan.js';

const env: SandboxEnvironment = {
  user: 'agent',
  home: '/home/agent',
  defaultCwd: '/home/agent',
  cwd: null,
  mounts: [{ hostPath: '/home/me/proj', sandboxPath: '/workspace' }],
  incarnation: 'i',
  execPrefix: () => [],
  getTempDir: () => '/tmp',
};
const rec = { name: 's' } as SandboxRecord;
const session = (cwd: string | null) => ({
  sandbox: 's',
  key: 'k',
  parent: null,
  cwd,
  source: cwd ? ('observed' as const) : null,
  observedAt: null,
  createdAt: '',
  lastWarnings: [],
  restoredFrom: null,
});

describe('session plan', () => {
  it('"~" resolves to the measured home; roots are the home and an absolute declared default', () => {
    expect(resolvedDefault(env, '~')).toBe('/home/agent');
    expect(resolvedDefault(env, '/srv')).toBe('/srv');
    expect(sandboxRoots(env, '~')).toEqual(['/home/agent']);
    expect(sandboxRoots(env, '/srv')).toEqual(['/home/agent', '/srv']);
  });

  it('a session stands at its record, else at the default', () => {
    const base = { rec, env, key: 'k', isContainer: true, hostHome: '/home/me', declared: '~' };
    expect(planSession({ ...base, existing: session('/etc') }).plan.target).toBe('/etc');
    expect(planSession({ ...base, existing: undefined }).plan.target).toBe('/home/agent');
  });

  it('a recorded host path on a container goes through its mount', () => {
    const p = planSession({
      rec,
      env,
      key: 'k',
      isContainer: true,
      hostHome: '/home/me',
      declared: '~',
      existing: session('/home/me/proj/src'),
    });
    expect(p.plan.target).toBe('/workspace/src');
  });

  it('a step with neither record nor workdir fails closed', () => {
    expect(() =>
      planSession({ rec, env, key: 'k', isContainer: true, hostHome: '/home/me', declared: '~', existing: undefined, stepId: 'step-1' }),
    ).toThrow(expect.objectContaining({ code: 'cwd_unresolved' }));
  });
});
