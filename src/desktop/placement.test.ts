import { describe, expect, it } from 'vitest';
import { resolvePlacement } from './placement.js';

const docker = { name: 'docker', supportsStreams: true };
const local = { name: 'local', supportsStreams: true };
const blind = { name: 'hosted-space', supportsStreams: false };

describe('resolvePlacement', () => {
  it.each([
    ['auto', local, 'host'],
    ['sandbox', local, 'host'],
    ['host', local, 'host'],
    ['auto', docker, 'sandbox'],
    ['sandbox', docker, 'sandbox'],
    ['host', docker, 'host'],
    ['auto', blind, 'refused'],
    ['sandbox', blind, 'refused'],
    ['host', blind, 'host'],
  ] as const)('%s on %o → %s', (setting, backend, where) => {
    expect(resolvePlacement(setting, backend).where).toBe(where);
  });

  it('a refusal names the backend and the setting that would allow it', () => {
    const p = resolvePlacement('auto', blind);
    expect(p.where === 'refused' && p.reason).toMatch(/hosted-space/);
    expect(p.where === 'refused' && p.reason).toMatch(/--placement host/);
  });
});
