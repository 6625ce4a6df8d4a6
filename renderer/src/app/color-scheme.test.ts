import { describe, expect, it } from 'vitest';
import { currentColorScheme, TERMINAL_THEMES, watchColorScheme } from './color-scheme.js';

/** A matchMedia stand-in whose `prefers-color-scheme: light` answer the test flips. */
function fakeWindow(light: boolean) {
  const listeners = new Set<(e: { matches: boolean }) => void>();
  const mq = {
    get matches() {
      return light;
    },
    addEventListener: (_: string, l: (e: { matches: boolean }) => void) => listeners.add(l),
    removeEventListener: (_: string, l: (e: { matches: boolean }) => void) => listeners.delete(l),
  };
  return {
    win: { matchMedia: () => mq } as unknown as Pick<Window, 'matchMedia'>,
    flip(to: boolean) {
      light = to;
      for (const l of listeners) l({ matches: to });
    },
    listeners,
  };
}

describe('color scheme', () => {
  it('follows prefers-color-scheme, dark when the query is unknown', () => {
    expect(currentColorScheme(fakeWindow(true).win)).toBe('light');
    expect(currentColorScheme(fakeWindow(false).win)).toBe('dark');
    expect(currentColorScheme({} as Pick<Window, 'matchMedia'>)).toBe('dark');
  });

  it('reports a change of the system scheme and stops when unsubscribed', () => {
    const f = fakeWindow(false);
    const seen: string[] = [];
    const stop = watchColorScheme((s) => seen.push(s), f.win);
    f.flip(true);
    f.flip(false);
    stop();
    f.flip(true);
    expect(seen).toEqual(['light', 'dark']);
    expect(f.listeners.size).toBe(0);
  });

  it('each scheme has its own terminal background and text', () => {
    expect(TERMINAL_THEMES.light.background).not.toBe(TERMINAL_THEMES.dark.background);
    expect(TERMINAL_THEMES.light.foreground).not.toBe(TERMINAL_THEMES.dark.foreground);
  });
});
