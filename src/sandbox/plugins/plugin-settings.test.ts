import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mergeSettings, parseIsolation, readConfigPlugins } from './plugin-settings.js';

const made: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sdesk-cfg-'));
  made.push(d);
  return d;
};
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('plugin settings', () => {
  it('config.json plugins, layered under the caller\'s options', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ plugins: { isolation: 'host', paths: ['/p/one'], timeouts: { shortMs: 5 } } }));
    const s = mergeSettings(readConfigPlugins(dir), { paths: ['/p/two'], isolation: 'in-process' });
    expect(s).toEqual({ isolation: 'in-process', paths: ['/p/one', '/p/two'], timeouts: { shortMs: 5, longMs: 900_000 }, scanDataDir: true });
  });
  it('a wrong isolation value is an error that says the choices; a missing file is no settings', () => {
    expect(() => parseIsolation('container', 'plugins.isolation')).toThrow(/must be "in-process" or "host"/);
    expect(parseIsolation('in_process', 'x')).toBe('in-process');
    expect(readConfigPlugins(tempDir())).toEqual({});
  });
});
