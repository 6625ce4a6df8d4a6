import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWindowState, saveWindowState } from './window-state.js';

describe('window state', () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'sdesk-win-'));
    dirs.push(d);
    return d;
  };
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('remembers bounds and maximized across a restart', () => {
    const d = dir();
    saveWindowState(d, { x: 10, y: 20, width: 1400, height: 900, maximized: true });
    expect(loadWindowState(d)).toEqual({ x: 10, y: 20, width: 1400, height: 900, maximized: true });
  });

  it('falls back to a sane default when nothing, or nonsense, was saved', () => {
    const d = dir();
    expect(loadWindowState(d)).toMatchObject({ width: 1360, height: 860, maximized: false });
    writeFileSync(join(d, 'window-state.json'), '{"width": 5, "height": "tall"}');
    expect(loadWindowState(d)).toMatchObject({ width: 1360, height: 860 });
    writeFileSync(join(d, 'window-state.json'), 'not json');
    expect(loadWindowState(d).width).toBe(1360);
  });

  it('never throws when the directory cannot be written', () => {
    expect(() => saveWindowState('/nonexistent/dir', { width: 800, height: 600, maximized: false })).not.toThrow();
  });
});
