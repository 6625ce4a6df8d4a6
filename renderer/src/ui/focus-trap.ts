/**
 * Focus for dialogs (WAI-ARIA APG "dialog (modal)" pattern): on open the focus moves into the dialog,
 * Tab and Shift+Tab cycle inside it, focus that escapes (a click on the page behind) is brought back,
 * and on close the focus returns to the control that opened it.
 *
 * Written here rather than taken from `focus-trap` (npm): the app needs ~60 lines — one hook, the
 * focusable-element query, and one exception the library has no notion of: "companion" regions
 * (`data-dialog-companion`, the create's floating progress with its Cancel) that sit outside the dialog's
 * element but belong to it while it waits.
 */
import { useEffect, useLayoutEffect, useRef, type RefObject } from 'react';

const FOCUSABLE = [
  'a[href]',
  'button:not([disabled])',
  'input:not([disabled]):not([type="hidden"])',
  'select:not([disabled])',
  'textarea:not([disabled])',
  'summary',
  '[tabindex]:not([tabindex="-1"])',
].join(',');

/** The elements Tab can reach inside `root`, in document order (hidden ones left out). */
export function focusableIn(root: ParentNode): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(
    (el) => !el.closest('[hidden], [inert], fieldset:disabled') && el.getAttribute('aria-hidden') !== 'true',
  );
}

export interface FocusTrapOptions {
  /** Where the focus goes on open (default: the first focusable element). */
  initialFocus?: () => HTMLElement | null;
  /** Called on Escape (the trap itself closes nothing). */
  onEscape?: () => void;
}

export function useFocusTrap(ref: RefObject<HTMLElement | null>, opts: FocusTrapOptions = {}): void {
  const latest = useRef(opts);
  latest.current = opts;
  // The opener is read in a layout effect: those run before any of the dialog's own effects, one of
  // which may already have moved the focus into it (the create dialog focuses its name field).
  const opener = useRef<HTMLElement | null>(null);
  useLayoutEffect(() => {
    opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  }, []);
  useEffect(() => {
    const root = ref.current;
    if (!root) return;
    const inside = (el: EventTarget | null): boolean =>
      el instanceof Node && (root.contains(el) || [...document.querySelectorAll('[data-dialog-companion]')].some((c) => c.contains(el)));
    const cycle = (): HTMLElement[] => [
      ...focusableIn(root),
      ...[...document.querySelectorAll('[data-dialog-companion]')].flatMap((c) => focusableIn(c)),
    ];

    if (!inside(document.activeElement)) (latest.current.initialFocus?.() ?? cycle()[0] ?? root).focus();

    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && latest.current.onEscape) {
        e.preventDefault();
        latest.current.onEscape();
        return;
      }
      if (e.key !== 'Tab') return;
      const els = cycle();
      if (els.length === 0) {
        e.preventDefault();
        return;
      }
      const at = els.indexOf(document.activeElement as HTMLElement);
      const next = e.shiftKey ? (at <= 0 ? els.length - 1 : at - 1) : at === -1 || at === els.length - 1 ? 0 : at + 1;
      e.preventDefault();
      els[next]!.focus();
    };
    // Focus that lands behind the dialog (a click on the page, a programmatic focus) comes back in.
    const onFocusIn = (e: FocusEvent) => {
      if (!inside(e.target)) (cycle()[0] ?? root).focus();
    };
    document.addEventListener('keydown', onKey, true);
    document.addEventListener('focusin', onFocusIn);
    return () => {
      document.removeEventListener('keydown', onKey, true);
      document.removeEventListener('focusin', onFocusIn);
      // Back to the opener, if it is still on the page (a removed sandbox's Remove button is not).
      if (opener.current?.isConnected) opener.current.focus();
    };
  }, [ref]);
}
