import { describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../shared/errors.js';
import type { SandboxOperation } from './contract.js';
import { newSandboxRecord, provisionSpec, stateDuring, unavailableInfo } from './sandbox-info.js';

describe('sandbox info', () => {
  const rec = newSandboxRecord({
    name: 'box',
    backend: 'docker',
    image: 'img',
    declaredDefaultCwd: null,
    mounts: [],
    env: { A: '1' },
    options: {},
  });

  it('a new record holds what was asked and nothing measured', () => {
    expect(rec).toMatchObject({
      name: 'box',
      backend: 'docker',
      image: 'img',
      user: null,
      backendRef: null,
      home: null,
      homeIncarnation: null,
      lastObservedCwd: null,
    });
    expect(Date.parse(rec.createdAt)).not.toBeNaN();
  });

  it('the provision spec is labelled and named per data directory', () => {
    expect(provisionSpec(rec, 'abc')).toMatchObject({
      name: 'box',
      env: { A: '1' },
      labels: { 'io.sandbox-desk.managed': 'true', 'io.sandbox-desk.sandbox': 'box', 'io.sandbox-desk.instance': 'abc' },
      resourceName: 'sdesk-abc-box',
    });
  });

  it('an unavailable sandbox says why, in one line', () => {
    const info = unavailableInfo(rec, null, new SandboxDeskError('engine_unreachable', 'docker is not running', { hint: 'start it' }));
    expect(info).toMatchObject({ state: 'unavailable', declaredDefaultCwd: '~', supportsStreams: false, isContainer: true });
    expect(info.stateDetail).toMatch(/docker is not running/);
  });

  it("a sandbox under a create/start/stop reads creating/starting/stopping, not the backend's running", () => {
    const op = (kind: SandboxOperation['kind'], done = false): SandboxOperation => ({
      kind,
      startedAt: '',
      events: [],
      done,
      error: null,
      cancellable: kind !== 'stop',
      cancelled: false,
    });
    // QEMU's process exists long before the guest answers SSH: the backend already says running.
    expect(stateDuring('running', op('start'))).toBe('starting');
    expect(stateDuring('running', op('create'))).toBe('starting');
    expect(stateDuring('missing', op('create'))).toBe('creating');
    expect(stateDuring('running', op('stop'))).toBe('stopping');
    expect(stateDuring('running', op('start', true))).toBe('running');
    expect(stateDuring('stopped', null)).toBe('stopped');
  });
});
