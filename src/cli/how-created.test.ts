import { describe, expect, it } from 'vitest';
import { NO_POOLS_REASON } from '../shared/warm-outcome.js';
import { howCreated } from './main.js';

describe('the create line says how the sandbox started (issue 37), in the window notice’s words', () => {
  it('names the pool a warm create was claimed from', () => {
    expect(howCreated({ warm: true, warmPool: 'sandbox-desk/base:latest, desktop' })).toBe(
      ', warm from the pool of sandbox-desk/base:latest, desktop',
    );
  });
  it('says why it went cold where pools are set up, and nothing where none are', () => {
    expect(howCreated({ warm: false, warmReason: 'the pool of sandbox-desk/base:latest had no ready sandbox' })).toBe(
      ', cold (the pool of sandbox-desk/base:latest had no ready sandbox)',
    );
    expect(howCreated({ warm: false, warmReason: NO_POOLS_REASON })).toBe('');
  });
});
