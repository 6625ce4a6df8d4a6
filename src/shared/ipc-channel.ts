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
/** Main → window: each core event (src/shared/core-events.ts), the bridge's twin of `/ws/events`. */
export const EVENT_CHANNEL = 'sandbox-desk:event';
export type EventChannel = typeof EVENT_CHANNEL;

/** Window → main: a system notification (an operation ended while the window was not focused). */
export const NOTIFY_CHANNEL = 'sandbox-desk:notify';
export type NotifyChannel = typeof NOTIFY_CHANNEL;

/** Window → main: does main forward the core's events (an in-process core)? A child core's window uses `/ws/events`. */
export const EVENTS_BRIDGED_CHANNEL = 'sandbox-desk:events-bridged';
export type EventsBridgedChannel = typeof EVENTS_BRIDGED_CHANNEL;

/**
 * The person's clipboard for the window (read and write text): a sandboxed preload has no
 * `clipboard` module, so main answers with its own. Spelled as a type in the preload, as above.
 */
export const CLIPBOARD_CHANNEL = 'sandbox-desk:clipboard';
export type ClipboardChannel = typeof CLIPBOARD_CHANNEL;
