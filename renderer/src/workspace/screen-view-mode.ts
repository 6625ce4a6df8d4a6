/**
 * How the remote desktop meets the pane. `resize` (the default) asks the remote desktop to take the
 * pane's size (RFB SetDesktopSize — noVNC's resizeSession; Xvnc accepts it), so pixels are 1:1 and
 * nothing is black bars; it is a change to the agent's desktop, so like keyboard and mouse it needs
 * control (a view-only viewer sees it fitted meanwhile); giving control back puts the agent's size back
 * (the core remembers it with the lease: src/desktop/control-handover.ts). `fit` scales the desktop into the pane;
 * `actual` shows it 1:1 and scrolls.
 */
export type ScreenMode = 'resize' | 'fit' | 'actual';

export const SCREEN_MODES: ReadonlyArray<{ mode: ScreenMode; label: string; title: string }> = [
  {
    mode: 'resize',
    label: 'Resize to pane',
    title: 'The remote desktop takes this pane’s size (1:1 pixels) while you have control; giving back restores the agent’s size',
  },
  { mode: 'fit', label: 'Fit', title: 'Scale the remote desktop down (or up) to fit the pane' },
  { mode: 'actual', label: '1:1', title: 'Actual size, with scroll bars when it is larger than the pane' },
];

const KEY = 'sdesk.screenMode';

export function loadScreenMode(storage: Pick<Storage, 'getItem'> | undefined = globalThis.localStorage): ScreenMode {
  let saved: string | null = null;
  try {
    saved = storage?.getItem(KEY) ?? null;
  } catch {
    // Storage refused (a private window): the default.
  }
  return SCREEN_MODES.some((m) => m.mode === saved) ? (saved as ScreenMode) : 'resize';
}

export function saveScreenMode(mode: ScreenMode, storage: Pick<Storage, 'setItem'> | undefined = globalThis.localStorage): void {
  try {
    storage?.setItem(KEY, mode);
  } catch {
    // Not remembered; still applied.
  }
}

/** What noVNC is told for a mode (and whether this viewer may resize the remote desktop now). */
export function rfbSettings(
  mode: ScreenMode,
  viewOnly: boolean,
): { scaleViewport: boolean; clipViewport: boolean; resizeSession: boolean } {
  if (mode === 'actual') return { scaleViewport: false, clipViewport: false, resizeSession: false };
  if (mode === 'fit') return { scaleViewport: true, clipViewport: false, resizeSession: false };
  // Scaled while the remote is not (yet) the pane's size; at the pane's size the scale is 1.
  return { scaleViewport: true, clipViewport: false, resizeSession: !viewOnly };
}

/** The address of a tab with just this sandbox's screen (it asks for its own ticket, like every viewer). */
export function popOutUrl(sandbox: string, here: string = location.href): string {
  // From the whole address, not location.origin: a file:// page (Electron) has an opaque origin.
  const u = new URL(here);
  u.search = `?screen=${encodeURIComponent(sandbox)}`;
  u.hash = '';
  return u.toString();
}

/** The sandbox a screen-only page shows (`?screen=NAME`), or null for the whole app. */
export function screenOnlySandbox(search: string = location.search): string | null {
  const name = new URLSearchParams(search).get('screen');
  return name ? name : null;
}
