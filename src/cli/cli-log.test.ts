import { describe, expect, it } from 'vitest';
import { logLevelOf, packageVersion } from './cli-log.js';

describe('CLI log options', () => {
  it('--debug wins, then --log-level, then the config; a wrong level names the choices', () => {
    expect(logLevelOf({ debug: true, logLevel: 'error' }, 'info')).toBe('debug');
    expect(logLevelOf({ logLevel: 'warn' }, 'info')).toBe('warn');
    expect(logLevelOf({}, 'error')).toBe('error');
    expect(() => logLevelOf({ logLevel: 'loud' }, 'info')).toThrow(
      /--log-level must be one of trace, debug, info, warn, error, fatal, silent, got "loud"/,
    );
  });
  it("the version is the package's", () => {
    expect(packageVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
