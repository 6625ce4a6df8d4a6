import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { NativeTheme } from 'electron';
import { followSystemTheme, WINDOW_BACKGROUND, windowBackground } from './window-theme.js';

class FakeTheme extends EventEmitter {
  shouldUseDarkColors = true;
  themeSource: NativeTheme['themeSource'] = 'dark';
}

describe('window theme', () => {
  it('the background matches the page in each scheme', () => {
    expect(windowBackground({ shouldUseDarkColors: true })).toBe(WINDOW_BACKGROUND.dark);
    expect(windowBackground({ shouldUseDarkColors: false })).toBe(WINDOW_BACKGROUND.light);
  });

  it('follows the system and repaints when the OS switches', () => {
    const t = new FakeTheme();
    const applied: string[] = [];
    const stop = followSystemTheme(t as unknown as NativeTheme, (bg) => applied.push(bg));
    expect(t.themeSource).toBe('system');
    t.shouldUseDarkColors = false;
    t.emit('updated');
    stop();
    t.emit('updated');
    expect(applied).toEqual([WINDOW_BACKGROUND.light]);
  });
});
