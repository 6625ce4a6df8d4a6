import { describe, expect, it } from 'vitest';
import { runMain } from '../../test/run-cli-main.js';
import { logLine, policyLine } from './network-commands.js';

describe('network flags: a bad entry is refused with exit 125 and what a valid one looks like (before the core opens)', () => {
  it.each([
    ['not a host!', 'label'],
    ['foo.*.example.com', 'wildcard'],
    ['10.0.0.0/33', 'prefix /33'],
    ['example.com:0', 'port 0'],
    ['example.com:70000', 'port 70000'],
  ])('sandbox create --allow %j', async (entry, why) => {
    const r = await runMain(['sandbox', 'create', 'x', '--network', 'allow', '--allow', entry]);
    expect(r.code).toBe(125);
    expect(r.stderr).toContain(why);
    expect(r.stderr).toContain('valid entries: example.com, example.com:443, *.example.com');
  });

  it('sandbox network --allow/--deny check their entries the same way', async () => {
    for (const flag of ['--allow', '--deny']) {
      const r = await runMain(['sandbox', 'network', 'x', flag, '*example.com']);
      expect(r.code).toBe(125);
      expect(r.stderr).toContain('wildcard');
    }
  });

  it('an unknown mode says the three there are', async () => {
    const r = await runMain(['sandbox', 'create', 'x', '--network', 'closed']);
    expect(r.code).toBe(125);
    expect(r.stderr).toMatch(/--network "closed" is not a network mode — give open \(the default\), offline .* or allow/);
  });

  it('prints policies and log lines in one line each', () => {
    expect(policyLine({ mode: 'allow', allow: ['a.com', '10.0.0.0/8'] })).toBe('allow a.com, 10.0.0.0/8');
    expect(policyLine({ mode: 'offline', allow: [] })).toBe('offline');
    expect(
      logLine({
        at: 'T',
        sandbox: 's',
        host: 'b.com',
        port: 443,
        verdict: 'denied',
        kind: 'connect',
        reason: 'not on the allow list',
        process: null,
      }),
    ).toBe('T  DENY   b.com:443  connect  (not on the allow list)\n');
  });
});
