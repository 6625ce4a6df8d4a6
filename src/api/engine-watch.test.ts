import { describe, expect, it } from 'vitest';
import { CoreEventBus, type CoreEvent } from '../shared/core-events.js';
import type { ProviderWatchListener, SandboxProvider } from '../sandbox/provider.js';
import { EngineWatch } from './engine-watch.js';

/** A provider whose engine feed the test drives (the Docker events boundary, faked). */
function fakeProvider() {
  const state = { listener: null as ProviderWatchListener | null, labels: null as Record<string, string> | null, disposed: 0 };
  const provider = {
    name: 'docker',
    watch(labels: Record<string, string>, listener: ProviderWatchListener) {
      state.labels = labels;
      state.listener = listener;
      return { dispose: () => void state.disposed++ };
    },
  } as unknown as SandboxProvider;
  return { provider, state };
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(cond()).toBe(true);
};

describe('EngineWatch', () => {
  it("follows the engine only while someone listens; changes and the engine's going and coming become events", async () => {
    const bus = new CoreEventBus();
    const { provider, state } = fakeProvider();
    const seen: CoreEvent[] = [];
    bus.onEvent((e) => seen.push(e));
    const watch = new EngineWatch({
      bus,
      providers: async () => [provider, { name: 'local' } as SandboxProvider],
      labels: { 'io.sandbox-desk.instance': 'abc' },
      sandboxOf: (_b, ref, labelled) => labelled ?? (ref === 'c2' ? 'two' : null),
      sandboxesOf: () => ['one', 'two'],
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(state.listener).toBeNull(); // nobody listens: no feed

    const listening = bus.listen();
    await until(() => state.listener !== null);
    expect(state.labels).toEqual({ 'io.sandbox-desk.instance': 'abc' });
    state.listener!.changed({ sandbox: 'one', backendRef: 'c1', action: 'die' });
    state.listener!.changed({ sandbox: null, backendRef: 'c2', action: 'start' });
    state.listener!.changed({ sandbox: null, backendRef: 'someone-elses', action: 'start' });
    // Docker restarted: every docker sandbox reads differently (unavailable), then back.
    state.listener!.engine(false, 'connect ENOENT /var/run/docker.sock');
    state.listener!.engine(true, null);
    expect(
      seen.map((e) => (e.topic === 'sandbox' ? `${e.sandbox}:${e.reason}` : e.topic === 'engine' ? `engine:${e.reachable}` : e.topic)),
    ).toEqual([
      'one:engine:die',
      'two:engine:start',
      'engine:false',
      'one:engine gone',
      'two:engine gone',
      'engine:true',
      'one:engine back',
      'two:engine back',
    ]);
    listening.dispose();
    expect(state.disposed).toBe(1);
    watch.dispose();
  });
});
