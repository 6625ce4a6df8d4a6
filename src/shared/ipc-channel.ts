/**
 * The one IPC channel between the Electron window and main: the preload's `invoke` sends contract
 * calls on it, main answers them. The sandboxed preload cannot load this module at run time (its
 * `require` only knows electron's own modules), so it spells the literal with this type: a
 * different name fails the typecheck.
 */
export const INVOKE_CHANNEL = 'sandbox-desk:invoke';
export type InvokeChannel = typeof INVOKE_CHANNEL;

/**
 * The DOM event the Electron application menu dispatches in the page for a page action (New sandbox):
 * main runs `window.dispatchEvent(new CustomEvent(MENU_SHORTCUT_EVENT, {detail: action}))`, the
 * renderer's shortcut hook handles it like the key. No preload change: the bridge stays one function.
 */
export const MENU_SHORTCUT_EVENT = 'sandbox-desk:shortcut';
