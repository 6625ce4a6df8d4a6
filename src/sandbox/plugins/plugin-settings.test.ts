import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, parseConfig } from '../../platform/config.js';
import { DEFAULT_TIMEOUTS } from './plugin-guard.js';
import { mergeSettings, namesPlugin, parseIsolation, settingsFromConfig } from './plugin-settings.js';

describe('plugin settings', () => {
  it("the config's plugins, layered under the caller's options", () => {
    const cfg = parseConfig({ plugins: { isolation: 'host', paths: ['/p/one'], disabled: ['podman'], timeouts: { shortMs: 5 } } });
    const s = mergeSettings(settingsFromConfig(cfg.plugins), { paths: ['/p/two'], isolation: 'in-process', disabled: ['x'] });
    expect(s).toEqual({
      isolation: 'in-process',
      paths: ['/p/one', '/p/two'],
      timeouts: { shortMs: 5, longMs: 900_000 },
      scanDataDir: true,
      builtin: true,
      disabled: ['podman', 'x'],
    });
  });
  it('defaults: built-in plugins on, nothing disabled; the config schema and the guard agree on the timeouts', () => {
    expect(mergeSettings(settingsFromConfig(DEFAULT_CONFIG.plugins))).toMatchObject({
      builtin: true,
      disabled: [],
      isolation: 'in-process',
    });
    expect(DEFAULT_CONFIG.plugins.timeouts).toEqual(DEFAULT_TIMEOUTS);
  });
  it('a wrong isolation value is an error that says the choices', () => {
    expect(() => parseIsolation('container', 'plugins.isolation')).toThrow(/must be "in-process" or "host"/);
    expect(parseIsolation('in_process', 'x')).toBe('in-process');
  });
  it('a plugin is named by its package name or, for ours, the short one', () => {
    expect(namesPlugin('ssh', 'sandbox-desk-ssh')).toBe(true);
    expect(namesPlugin('sandbox-desk-ssh', 'sandbox-desk-ssh')).toBe(true);
    expect(namesPlugin('podman', 'sandbox-desk-ssh')).toBe(false);
  });
});
