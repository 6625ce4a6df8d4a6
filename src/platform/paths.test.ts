import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { homePaths, resolvePaths } from './paths.js';

describe('app paths', () => {
  it('XDG: data, config and state in their own base directories; the old config file in the data dir', () => {
    expect(resolvePaths({ XDG_DATA_HOME: '/x/data', XDG_CONFIG_HOME: '/x/config', XDG_STATE_HOME: '/x/state' })).toEqual({
      dataDir: '/x/data/sandbox-desk',
      configDir: '/x/config/sandbox-desk',
      configFile: '/x/config/sandbox-desk/config.json',
      legacyConfigFile: '/x/data/sandbox-desk/config.json',
      stateDir: '/x/state/sandbox-desk',
      logFile: '/x/state/sandbox-desk/sandbox-desk.log',
    });
  });
  it("unset or relative XDG variables fall back to the spec's defaults under the home directory", () => {
    const p = resolvePaths({ XDG_CONFIG_HOME: 'relative' });
    expect(p.dataDir).toBe(join(homedir(), '.local', 'share', 'sandbox-desk'));
    expect(p.configFile).toBe(join(homedir(), '.config', 'sandbox-desk', 'config.json'));
    expect(p.logFile).toBe(join(homedir(), '.local', 'state', 'sandbox-desk', 'sandbox-desk.log'));
  });
  it('SANDBOX_DESK_HOME puts everything under one folder, whatever XDG says (hermetic tests)', () => {
    const p = resolvePaths({ SANDBOX_DESK_HOME: '/t/h', XDG_CONFIG_HOME: '/x/config', XDG_STATE_HOME: '/x/state' });
    expect(p).toEqual(homePaths('/t/h'));
    expect(p).toMatchObject({
      dataDir: '/t/h',
      configFile: '/t/h/config.json',
      legacyConfigFile: null,
      logFile: '/t/h/logs/sandbox-desk.log',
    });
  });
});
