/**
 * The one IPC channel between the Electron window and main: the preload's `invoke` sends contract
 * calls on it, main answers them. The sandboxed preload cannot load this module at run time (its
 * `require` only knows electron's own modules), so it spells the literal with this type: a
 * different name fails the typecheck.
 */
export const INVOKE_CHANNEL = 'sandbox-desk:invoke';
export type InvokeChannel = typeof INVOKE_CHANNEL;
