/**
 * The window follows the OS theme. Electron's `nativeTheme` with `themeSource = 'system'` makes the
 * page's `prefers-color-scheme` the OS's (the renderer's CSS and terminal theme follow that query); the
 * main process only keeps what it paints itself — the window background shown before the page draws and
 * behind it on resize — in step, so a light OS never flashes a dark window.
 */
import type { NativeTheme } from 'electron';

/** The page's `--bg` in each scheme (renderer/src/styles.css, theme-light.css). */
export const WINDOW_BACKGROUND = { dark: '#15171c', light: '#f6f7f9' } as const;

export function windowBackground(theme: Pick<NativeTheme, 'shouldUseDarkColors'>): string {
  return theme.shouldUseDarkColors ? WINDOW_BACKGROUND.dark : WINDOW_BACKGROUND.light;
}

/** Follows the system; calls `apply` with the background now and on every OS theme change. Returns the unsubscribe. */
export function followSystemTheme(
  theme: Pick<NativeTheme, 'shouldUseDarkColors' | 'themeSource' | 'on' | 'off'>,
  apply: (background: string) => void,
): () => void {
  theme.themeSource = 'system';
  const onUpdated = () => apply(windowBackground(theme));
  theme.on('updated', onUpdated);
  return () => theme.off('updated', onUpdated);
}
