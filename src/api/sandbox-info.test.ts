import { describe, expect, it } from 'vitest';
import { SandboxDeskError } from '../shared/errors.js';
import { newSandboxRecord, provisionSpec, unavailableInfo } from './sandbox-info.js';

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
});
