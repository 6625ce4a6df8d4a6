/**
 * What a browser test reads from the window's terminals: the text of a terminal's xterm buffer (the
 * renderer exposes each live xterm as `window.__sdeskTerminals[session]` for tests). One copy, for
 * every UI end-to-end test.
 */
import type { Page } from 'playwright-core';

export const bufferOf = (page: Page, session: string): Promise<string> =>
  page.evaluate((s) => {
    const tm = (
      window as unknown as {
        __sdeskTerminals?: Record<
          string,
          { buffer: { active: { length: number; getLine(i: number): { translateToString(trim: boolean): string } | undefined } } }
        >;
      }
    ).__sdeskTerminals?.[s];
    if (!tm) return '';
    const b = tm.buffer.active;
    return Array.from({ length: b.length }, (_, i) => b.getLine(i)?.translateToString(true) ?? '').join('\n');
  }, session);
