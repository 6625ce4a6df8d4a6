import { describe, expect, it } from 'vitest';
import { rejectsWith } from '../../../test/expect-error.js';
import type { CheckpointCapability } from '../provider.js';
import { checkedArtifact, guardCheckpoints, type GuardedCall } from './plugin-guard-checkpoints.js';

const who = 'backend x (plugin x)';
const direct: GuardedCall = async (_m, _long, fn, check) => check(await fn());
const ref = { name: 's', backendRef: 'c', image: null, user: null, mounts: [], env: {}, options: {} };
const spec = { id: 'abc', memory: false, dir: '/tmp/x', labels: {} };

describe('a plugin checkpoint capability behind the guard', () => {
  it('keeps a good artifact, plain data only', () => {
    expect(checkedArtifact({ ref: 'img:1', memory: false, sizeBytes: 10.4, details: { a: 1, f: () => 1, o: {} } }, who)).toEqual({
      ref: 'img:1',
      memory: false,
      sizeBytes: 10,
      details: { a: 1 },
    });
  });

  it('refuses a malformed artifact, and a disk-only answer to a memory request', () => {
    expect(() => checkedArtifact(null, who)).toThrow(/plugin is broken|returned/);
    expect(() => checkedArtifact({ ref: '' }, who)).toThrow(/returned/);
    expect(() => checkedArtifact({ ref: 'img', memory: false }, who, { ...spec, memory: true })).toThrow(/disk only/);
  });

  it('checks every answer and names a missing method as unsupported', async () => {
    const inner = {
      memorySupport: async () => ({ supported: 'yes' }),
      checkpoint: async () => ({ ref: 'img:1', memory: false, sizeBytes: null }),
      verify: async () => ({ ok: false, detail: 'gone' }),
    } as unknown as CheckpointCapability;
    const g = guardCheckpoints(inner, who, direct, (v) => v as never);
    await rejectsWith(g.memorySupport(ref), 'backend_unavailable');
    expect(await g.checkpoint(ref, spec)).toEqual({ ref: 'img:1', memory: false, sizeBytes: null });
    expect(await g.verify({ ref: 'img:1', memory: false, sizeBytes: null })).toEqual({ ok: false, detail: 'gone' });
    const e = await rejectsWith(g.pause(ref), 'unsupported');
    expect(e.message).toContain('pause');
  });
});
