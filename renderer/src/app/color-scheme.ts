import type { ITheme } from '@xterm/xterm';

/**
 * Light or dark, following the system: `prefers-color-scheme` in the browser; in Electron the window's
 * Chromium reports the OS theme through `nativeTheme` (main/window-theme.ts), so the same query works.
 * The CSS follows by itself (styles.css is the dark default, theme-light.css overrides in a media query);
 * what lives in JavaScript — the xterm.js theme — reads and watches the scheme here.
 */
export type ColorScheme = 'light' | 'dark';

const QUERY = '(prefers-color-scheme: light)';

export function currentColorScheme(win: Pick<Window, 'matchMedia'> | undefined = globalThis.window): ColorScheme {
  return typeof win?.matchMedia === 'function' && win.matchMedia(QUERY).matches ? 'light' : 'dark';
}

/** Calls `onChange` when the system scheme changes; returns the unsubscribe. */
export function watchColorScheme(
  onChange: (s: ColorScheme) => void,
  win: Pick<Window, 'matchMedia'> | undefined = globalThis.window,
): () => void {
  if (typeof win?.matchMedia !== 'function') return () => undefined;
  const mq = win.matchMedia(QUERY);
  const listener = (e: MediaQueryListEvent) => onChange(e.matches ? 'light' : 'dark');
  mq.addEventListener('change', listener);
  return () => mq.removeEventListener('change', listener);
}

/** The terminal's colours: the pane's background and text, a visible cursor and selection, per scheme. */
export const TERMINAL_THEMES: Record<ColorScheme, ITheme> = {
  dark: {
    background: '#0f1115',
    foreground: '#d7dae0',
    cursor: '#8ab4f8',
    cursorAccent: '#0f1115',
    selectionBackground: '#2f3b54',
    black: '#1b1e24',
    brightBlack: '#5c6370',
  },
  light: {
    background: '#fbfbfc',
    foreground: '#1f2328',
    cursor: '#1a56c4',
    cursorAccent: '#fbfbfc',
    selectionBackground: '#c8d9f7',
    // The ANSI colours xterm's defaults draw for a dark background are too pale on white.
    black: '#1f2328',
    red: '#b42318',
    green: '#1a7f37',
    yellow: '#8a6100',
    blue: '#1a56c4',
    magenta: '#8250df',
    cyan: '#0f7a8a',
    white: '#6e7781',
    brightBlack: '#57606a',
    brightRed: '#cf222e',
    brightGreen: '#116329',
    brightYellow: '#7d4e00',
    brightBlue: '#0550ae',
    brightMagenta: '#6639ba',
    brightCyan: '#1b7c83',
    brightWhite: '#8c959f',
  },
};
