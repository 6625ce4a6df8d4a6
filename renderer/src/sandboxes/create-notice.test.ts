import { describe, expect, it } from 'vitest';
import type { CreateSandboxResult } from '../../../src/api/contract.js';
import { createdNotice } from './create-notice.js';

const made = (over: Partial<CreateSandboxResult> = {}): CreateSandboxResult => ({
  sandbox: { name: 'demo' } as CreateSandboxResult['sandbox'],
  warnings: [],
  ...over,
});

describe('the notice a create leaves', () => {
  it('a warm create names the pool that served it', () => {
    expect(createdNotice(made({ warm: true, warmPool: 'sandbox-desk/base:latest' }), true)).toEqual({
      text: 'Created demo warm from the pool of sandbox-desk/base:latest.',
      bad: false,
    });
  });

  it('a cold create says why only where pools are set up (off by default: every create is cold)', () => {
    const cold = made({ warm: false, warmReason: 'the pool of sandbox-desk/base:latest had no ready sandbox (1 being made)' });
    expect(createdNotice(cold, true).text).toBe(
      'Created demo cold (the pool of sandbox-desk/base:latest had no ready sandbox (1 being made)).',
    );
    expect(createdNotice(made({ warm: false, warmReason: 'no warm pool is configured' }), false)).toEqual({
      text: 'Created demo.',
      bad: false,
    });
  });

  it('warnings keep the notice until dismissed, after how it started', () => {
    const n = createdNotice(
      made({ warm: true, warmPool: 'sandbox-desk/desktop:latest, desktop', warnings: [{ code: 'backend_warning', message: 'slow disk' }] }),
      true,
    );
    expect(n.bad).toBe(true);
    expect(n.text).toMatch(/^Created demo warm from the pool of sandbox-desk\/desktop:latest, desktop, with warnings: .*slow disk$/);
  });
});
