import { describe, expect, it } from 'vitest';
import { proxyEnv, startedBefore } from './docker-network.js';

describe('startedBefore (the engine’s nanosecond times)', () => {
  it('compares past the millisecond, whatever the trailing zeros', () => {
    expect(startedBefore('2026-12-03T15:49:50.926705223Z', '2026-12-03T15:49:50.926705224Z')).toBe(true);
    expect(startedBefore('2026-12-03T15:49:50.9267052Z', '2026-12-03T15:49:50.926705223Z')).toBe(true);
    expect(startedBefore('2026-12-03T15:49:50.92670523Z', '2026-12-03T15:49:50.926705223Z')).toBe(false);
    expect(startedBefore('2026-12-03T15:49:51Z', '2026-12-03T15:49:50.999999999Z')).toBe(false);
    expect(startedBefore('2026-12-03T15:49:50Z', '2026-12-03T15:49:50.000000001Z')).toBe(true);
  });
  it('the same instant is not before itself', () => {
    expect(startedBefore('2026-12-03T15:49:50.5Z', '2026-12-03T15:49:50.500Z')).toBe(false);
  });
});

describe('proxyEnv', () => {
  it('points every client at the proxy address on the sandbox’s own loopback', () => {
    const env = proxyEnv();
    for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'SANDBOX_DESK_PROXY'])
      expect(env[k]).toBe('http://127.0.0.1:3128');
  });
});
