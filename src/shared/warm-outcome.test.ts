import { describe, expect, it } from 'vitest';
import { NO_POOLS_REASON, poolsWereConfigured, warmOutcomePhrase } from './warm-outcome.js';

describe('warmOutcomePhrase', () => {
  it('names the pool a warm create came from', () => {
    expect(warmOutcomePhrase({ warm: true, warmPool: 'sandbox-desk/base:latest' }, true)).toBe(
      'warm from the pool of sandbox-desk/base:latest',
    );
    expect(warmOutcomePhrase({ warm: true }, false)).toBe('warm from the pool of its template');
  });
  it('says why a create went cold only where pools are set up', () => {
    const cold = { warm: false, warmReason: 'host mounts (--mount) are bound when a container is made' };
    expect(warmOutcomePhrase(cold, true)).toBe('cold (host mounts (--mount) are bound when a container is made)');
    expect(warmOutcomePhrase(cold, false)).toBe('');
    expect(warmOutcomePhrase({ warm: false }, true)).toBe('');
  });
  it('tells from a create’s own answer whether pools were set up', () => {
    expect(poolsWereConfigured({ warm: false, warmReason: NO_POOLS_REASON })).toBe(false);
    expect(poolsWereConfigured({ warm: false, warmReason: 'the pool of x had no ready sandbox' })).toBe(true);
    expect(poolsWereConfigured({ warm: true, warmPool: 'x' })).toBe(true);
    expect(poolsWereConfigured({ warm: false })).toBe(false);
  });
});
