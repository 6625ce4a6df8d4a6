/**
 * The person's own clipboard, wherever the window runs: the Electron bridge (main's `clipboard`, since
 * a sandboxed preload has none) or, in a browser, the async Clipboard API (127.0.0.1 is a secure
 * context; reading asks the person's permission the first time). null when neither is there.
 */
export interface PersonClipboard {
  readText(): Promise<string>;
  writeText(text: string): Promise<void>;
}

export function personClipboard(): PersonClipboard | null {
  const bridged = window.sandboxDesk?.clipboard;
  if (bridged) return bridged;
  const web = typeof navigator !== 'undefined' ? navigator.clipboard : undefined;
  if (web && typeof web.readText === 'function') return { readText: () => web.readText(), writeText: (t) => web.writeText(t) };
  return null;
}

/** Bytes as the cap counts them (UTF-8), without Node's Buffer. */
export function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** The message shown when clipboard text is over the cap, in either direction. */
export function overCapMessage(direction: 'to-sandbox' | 'from-sandbox', bytes: number, max: number): string {
  return direction === 'to-sandbox'
    ? `Your clipboard holds ${bytes} bytes, over the limit of ${max}: not pasted into the sandbox (clipboard.maxBytes).`
    : `The sandbox copied ${bytes} bytes, over the limit of ${max}: your clipboard was left as it was (clipboard.maxBytes).`;
}
