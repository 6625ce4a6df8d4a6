import { describe, it, expect } from 'vitest';
import { thrown } from '../../test/expect-error.js';
import { PATH_MAX, resolveCommandCwd, validateWorkdir, type CwdPolicyInput } from './resolve-command-cwd.js';
import type { GuardContext } from './record-guard.js';

const guard: GuardContext = { isContainer: true, hostHome: '/root', sandboxRoots: ['/home/agent'], mounts: [] };
const noRecord = { record: null, recordSource: null };
const observed = (record: string) => ({ record, recordSource: 'observed' });

function input(over: Partial<CwdPolicyInput>): CwdPolicyInput {
  return { session: noRecord, defaultCwd: '/home/agent', guard, ...over };
}

describe('resolveCommandCwd', () => {
  describe('precedence', () => {
    it('uses an explicit workdir over the session record and the default', () => {
      const plan = resolveCommandCwd(input({ workdir: '/srv/w', session: observed('/workspace/a') }));
      expect(plan).toEqual({ target: '/srv/w', source: 'workdir', warnings: [] });
    });

    it('uses the session record over the default', () => {
      const plan = resolveCommandCwd(input({ session: observed('/workspace/a') }));
      expect(plan).toEqual({ target: '/workspace/a', source: 'session', warnings: [] });
    });

    it('uses the default when there is neither a workdir nor a record', () => {
      const plan = resolveCommandCwd(input({}));
      expect(plan).toEqual({ target: '/home/agent', source: 'default', warnings: [] });
    });

    it('uses the default when the session has no record, never anything else', () => {
      // The function only sees this session's view; a null record must not be filled from elsewhere.
      const plan = resolveCommandCwd(input({ session: { record: null, recordSource: 'observed' }, defaultCwd: '/opt/def' }));
      expect(plan.target).toBe('/opt/def');
      expect(plan.source).toBe('default');
    });
  });

  describe('source', () => {
    it('reports "created" for a record given at session creation', () => {
      const plan = resolveCommandCwd(input({ session: { record: '/workspace/c', recordSource: 'created' } }));
      expect(plan.source).toBe('created');
      expect(plan.target).toBe('/workspace/c');
    });

    it.each([['observed'], ['rescued'], [null]])('reports "session" for a record whose source is %s', (recordSource) => {
      const plan = resolveCommandCwd(input({ session: { record: '/workspace/c', recordSource } }));
      expect(plan.source).toBe('session');
    });

    it('reports "workdir" for an explicit workdir', () => {
      expect(resolveCommandCwd(input({ workdir: '/x' })).source).toBe('workdir');
    });

    it('reports "default" when falling back', () => {
      expect(resolveCommandCwd(input({})).source).toBe('default');
    });
  });

  describe('explicit workdir', () => {
    it('normalises an absolute workdir', () => {
      expect(resolveCommandCwd(input({ workdir: '/srv/./w/../x/' })).target).toBe('/srv/x');
    });

    it('translates an absolute workdir through a mount with a warning', () => {
      const plan = resolveCommandCwd(
        input({ workdir: '/root/proj/a', guard: { ...guard, mounts: [{ hostPath: '/root/proj', sandboxPath: '/workspace' }] } }),
      );
      expect(plan.target).toBe('/workspace/a');
      expect(plan.warnings.map((w) => w.code)).toEqual(['host_path_translated']);
    });

    it('keeps a host-shaped absolute workdir that no mount covers (the caller chose it)', () => {
      const plan = resolveCommandCwd(input({ workdir: '/root/x' }));
      expect(plan).toEqual({ target: '/root/x', source: 'workdir', warnings: [] });
    });

    it('resolves a relative workdir against the session record with a workdir_relative warning', () => {
      const plan = resolveCommandCwd(input({ workdir: 'sub/dir', session: observed('/workspace/a') }));
      expect(plan.target).toBe('/workspace/a/sub/dir');
      expect(plan.source).toBe('workdir');
      expect(plan.warnings).toHaveLength(1);
      expect(plan.warnings[0]).toMatchObject({ code: 'workdir_relative', asked: 'sub/dir', used: '/workspace/a/sub/dir' });
      expect(plan.warnings[0]!.message).toContain('session cwd');
    });

    it('resolves a relative workdir against the default when the session has no record', () => {
      const plan = resolveCommandCwd(input({ workdir: 'sub', defaultCwd: '/opt/def' }));
      expect(plan.target).toBe('/opt/def/sub');
      expect(plan.warnings[0]).toMatchObject({ code: 'workdir_relative', asked: 'sub', used: '/opt/def/sub' });
      expect(plan.warnings[0]!.message).toContain('default cwd');
    });

    it('normalises ".." in a relative workdir', () => {
      const plan = resolveCommandCwd(input({ workdir: '../b', session: observed('/workspace/a') }));
      expect(plan.target).toBe('/workspace/b');
    });

    it('resolves a relative workdir against the default, with both warnings, when the record is a dropped host path', () => {
      const plan = resolveCommandCwd(input({ workdir: 'sub', session: observed('/Users/me/p'), defaultCwd: '/opt/def' }));
      expect(plan.target).toBe('/opt/def/sub');
      expect(plan.warnings.map((w) => w.code)).toEqual(['host_path_dropped', 'workdir_relative']);
    });
  });

  describe('workdir validation', () => {
    it.each([
      ['a NUL byte', '/a\0b'],
      ['a newline', '/a\nb'],
      ['a carriage return', '/a\rb'],
      ['nothing (empty string)', ''],
      ['PATH_MAX bytes', '/' + 'a'.repeat(PATH_MAX - 1)],
      ['more than PATH_MAX bytes', '/' + 'a'.repeat(PATH_MAX + 10)],
    ])('rejects a workdir with %s as invalid_input', (_label, workdir) => {
      const err = thrown(() => resolveCommandCwd(input({ workdir })));
      expect(err.code).toBe('invalid_input');
    });

    it('accepts a workdir of PATH_MAX - 1 bytes', () => {
      const workdir = '/' + 'a'.repeat(PATH_MAX - 2);
      expect(resolveCommandCwd(input({ workdir })).target).toBe(workdir);
    });

    it('counts bytes, not characters, against PATH_MAX', () => {
      const workdir = '/' + 'é'.repeat(2048); // 1 + 4096 bytes, 2049 characters
      expect(thrown(() => validateWorkdir(workdir)).code).toBe('invalid_input');
    });

    it('validates a relative workdir too', () => {
      expect(thrown(() => resolveCommandCwd(input({ workdir: 'a\0b', session: observed('/w') }))).code).toBe('invalid_input');
    });
  });

  describe('with a workflow step', () => {
    it('refuses with cwd_unresolved when there is no workdir and no record, naming the step', () => {
      const err = thrown(() => resolveCommandCwd(input({ stepId: 'build-42' })));
      expect(err.code).toBe('cwd_unresolved');
      expect(err.message).toContain('build-42');
      expect(err.details).toEqual({ stepId: 'build-42' });
    });

    it('uses the session record', () => {
      const plan = resolveCommandCwd(input({ stepId: 's1', session: { record: '/workspace/s', recordSource: 'created' } }));
      expect(plan).toEqual({ target: '/workspace/s', source: 'created', warnings: [] });
    });

    it('uses an explicit absolute workdir without a record', () => {
      const plan = resolveCommandCwd(input({ stepId: 's1', workdir: '/srv/w' }));
      expect(plan).toEqual({ target: '/srv/w', source: 'workdir', warnings: [] });
    });

    it('resolves a relative workdir against the record', () => {
      const plan = resolveCommandCwd(input({ stepId: 's1', workdir: 'sub', session: observed('/workspace/s') }));
      expect(plan.target).toBe('/workspace/s/sub');
    });

    it('refuses a relative workdir without a record with cwd_unresolved', () => {
      const err = thrown(() => resolveCommandCwd(input({ stepId: 's1', workdir: 'sub' })));
      expect(err.code).toBe('cwd_unresolved');
      expect(err.message).toContain('s1');
    });

    it('refuses when the only record is a host path dropped on a container', () => {
      const err = thrown(() => resolveCommandCwd(input({ stepId: 's1', session: observed('/Users/me/p') })));
      expect(err.code).toBe('cwd_unresolved');
      expect(err.message).toContain('/Users/me/p');
    });

    it('refuses a relative workdir when the record is a dropped host path', () => {
      const err = thrown(() => resolveCommandCwd(input({ stepId: 's1', workdir: 'sub', session: observed('/root/p') })));
      expect(err.code).toBe('cwd_unresolved');
    });

    it('still validates the workdir first (invalid_input, not cwd_unresolved)', () => {
      expect(thrown(() => resolveCommandCwd(input({ stepId: 's1', workdir: '' }))).code).toBe('invalid_input');
    });
  });

  describe('host-path records', () => {
    it('falls back to the default with a host_path_dropped warning when the record is a host path', () => {
      const plan = resolveCommandCwd(input({ session: observed('/home/someoneelse/p'), defaultCwd: '/opt/def' }));
      expect(plan.target).toBe('/opt/def');
      expect(plan.source).toBe('default');
      expect(plan.warnings).toHaveLength(1);
      expect(plan.warnings[0]).toMatchObject({ code: 'host_path_dropped', asked: '/home/someoneelse/p' });
    });

    it('uses a record translated through a mount, keeping its source', () => {
      const plan = resolveCommandCwd(
        input({
          session: { record: '/root/proj/x', recordSource: 'created' },
          guard: { ...guard, mounts: [{ hostPath: '/root/proj', sandboxPath: '/workspace' }] },
        }),
      );
      expect(plan.target).toBe('/workspace/x');
      expect(plan.source).toBe('created');
      expect(plan.warnings.map((w) => w.code)).toEqual(['host_path_translated']);
    });

    it('keeps a host-shaped record on a non-container backend', () => {
      const plan = resolveCommandCwd(input({ session: observed('/home/me/p'), guard: { ...guard, isContainer: false } }));
      expect(plan).toEqual({ target: '/home/me/p', source: 'session', warnings: [] });
    });
  });
});

describe('validateWorkdir', () => {
  it('accepts an ordinary path', () => {
    expect(() => validateWorkdir('/workspace/a b')).not.toThrow();
  });

  it('gives a hint with each refusal', () => {
    expect(thrown(() => validateWorkdir('')).hint).toBeTruthy();
    expect(thrown(() => validateWorkdir('/a\0')).hint).toBeTruthy();
  });
});

describe('Windows-shaped workdirs (issue 12: they reached the wrapper, whose walk never ended)', () => {
  it.each([['D:\\proj\\x'], ['C:/proj/x'], ['\\\\server\\share'], ['\\\\server\\share\\x']])(
    'refuses %s as a host path before anything runs',
    (w) => {
      const e = thrown(() => resolveCommandCwd(input({ workdir: w })));
      expect(e.code).toBe('invalid_input');
      expect(e.message).toContain('is a Windows host path');
      expect(e.hint).toMatch(/mount/);
    },
  );

  it('refuses it on a local backend too: no Linux shell can enter it', () => {
    const e = thrown(() => resolveCommandCwd(input({ workdir: 'D:\\proj\\x', guard: { ...guard, isContainer: false } })));
    expect(e.code).toBe('invalid_input');
  });

  it('translates one under a declared mount', () => {
    const plan = resolveCommandCwd(
      input({ workdir: 'D:\\proj\\x', guard: { ...guard, mounts: [{ hostPath: 'D:\\proj', sandboxPath: '/workspace' }] } }),
    );
    expect(plan.target).toBe('/workspace/x');
  });

  it('never plans a target that is not absolute (a recorded relative cwd on a local backend)', () => {
    const e = thrown(() => resolveCommandCwd(input({ session: observed('D:\\proj'), guard: { ...guard, isContainer: false } })));
    expect(e.code).toBe('invalid_input');
    expect(e.message).toContain('not an absolute path');
  });
});
