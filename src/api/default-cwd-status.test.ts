import { describe, expect, it } from 'vitest';
import { defaultCwdStatus } from './default-cwd-status.js';

describe('defaultCwdStatus', () => {
  it('"~" typed: resolved to the measured home once connected', () => {
    expect(defaultCwdStatus({ typed: '~', declared: '~', effective: '~', resolved: '/home/agent' })).toEqual({
      typed: '~',
      state: 'resolved',
      text: '~ → /home/agent (resolved)',
    });
    expect(defaultCwdStatus({ typed: '~', declared: '~', effective: '~', resolved: null })).toMatchObject({
      state: 'not-connected',
      text: '~ (resolved once the sandbox is connected)',
    });
  });

  it('an absolute path is shown as typed, or with what normalising made of it', () => {
    expect(defaultCwdStatus({ typed: '/work', declared: '/work', effective: '/work', resolved: '/work' })).toMatchObject({
      state: 'as-typed',
      text: '/work (as typed)',
    });
    expect(defaultCwdStatus({ typed: '/work//src/', declared: '/work/src', effective: '/work/src', resolved: '/work/src' })).toMatchObject({
      state: 'normalized',
      text: '/work//src/ → /work/src (normalized)',
    });
  });

  it('a typed value the sandbox could not use says so, and what is used instead', () => {
    expect(defaultCwdStatus({ typed: '/Users/me/proj', declared: null, effective: '~', resolved: '/root' })).toEqual({
      typed: '/Users/me/proj',
      state: 'ignored',
      text: '/Users/me/proj — ignored: not usable inside this sandbox; using /root',
    });
  });

  it('nothing typed: the default in effect', () => {
    expect(defaultCwdStatus({ typed: null, declared: null, effective: '~', resolved: '/home/agent' })).toMatchObject({
      state: 'backend-default',
      text: '~ → /home/agent (not given: the default)',
    });
  });
});
