/**
 * The one IPC channel between the Electron window and main: the preload's `invoke` sends contract
 * calls on it, main answers them. The sandboxed preload cannot load this module at run time (its
 * `require` only knows electron's own modules), so it spells the literal with this type: a
 * different name fails the typecheck.
 */
export const INVOKE_CHANNEL = 'sandbox-desk:invoke';
export type InvokeChannel = typeof INVOKE_CHANNEL;

/**
 * The person's clipboard for the window (read and write text): a sandboxed preload has no
 * `clipboard` module, so main answers with its own. Spelled as a type in the preload, as above.
 */
export const CLIPBOARD_CHANNEL = 'sandbox-desk:clipboard';
export type ClipboardChannel = typeof CLIPBOARD_CHANNEL;
