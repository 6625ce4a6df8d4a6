import { useEffect, useRef } from 'react';
import { MENU_SHORTCUT_EVENT } from '../../../src/shared/ipc-channel.js';

export type ShortcutAction = 'newSandbox' | 'newTerminal' | 'toggleView';

/** The DOM event the Electron menu dispatches (main/app-menu.ts). */
const MENU_EVENT = MENU_SHORTCUT_EVENT;

const KEYS: Record<string, ShortcutAction> = { N: 'newSandbox', T: 'newTerminal', D: 'toggleView' };

/** The keys, as shown in the footer. Alt+Shift works too: a browser keeps Ctrl+Shift+N/T for itself. */
export const SHORTCUTS: Array<{ keys: string; what: string }> = [
  { keys: 'Ctrl+Shift+N', what: 'new sandbox' },
  { keys: 'Ctrl+Shift+T', what: 'new terminal tab' },
  { keys: 'Ctrl+Shift+D', what: 'details ⇄ workspace · frees the keyboard' },
];

/**
 * The shortcuts as this mode should advertise them: in a browser tab Ctrl+Shift+N/T open a private
 * window and reopen a closed tab before the page sees them, so the browser mode shows Alt+Shift.
 */
export function shortcutsFor(browser: boolean): Array<{ keys: string; what: string }> {
  return browser ? SHORTCUTS.map((s) => ({ ...s, keys: s.keys.replace('Ctrl+Shift', 'Alt+Shift') })) : SHORTCUTS;
}

/** Which app shortcut a key event is, if any (Ctrl+Shift+X or Alt+Shift+X). */
export function shortcutOf(e: Pick<KeyboardEvent, 'ctrlKey' | 'altKey' | 'shiftKey' | 'metaKey' | 'key' | 'type'>): ShortcutAction | null {
  if (e.type !== 'keydown' || !e.shiftKey || e.metaKey || !(e.ctrlKey || e.altKey)) return null;
  return KEYS[e.key.toUpperCase()] ?? null;
}

/**
 * Listens in the capture phase so the shortcuts work while the terminal or the remote screen has
 * the focus (both would otherwise take the keys for themselves; xterm is also told to let them pass).
 */
export function useShortcuts(handler: (action: ShortcutAction) => void): void {
  const latest = useRef(handler);
  latest.current = handler;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const action = shortcutOf(e);
      if (!action) return;
      e.preventDefault();
      e.stopPropagation();
      latest.current(action);
    };
    // The Electron application menu (main/app-menu.ts) delivers its page actions as this event.
    const onMenu = (e: Event) => {
      const action = (e as CustomEvent<unknown>).detail;
      if (action === 'newSandbox' || action === 'newTerminal' || action === 'toggleView') latest.current(action);
    };
    window.addEventListener('keydown', onKey, true);
    window.addEventListener(MENU_EVENT, onMenu);
    return () => {
      window.removeEventListener('keydown', onKey, true);
      window.removeEventListener(MENU_EVENT, onMenu);
    };
  }, []);
}
