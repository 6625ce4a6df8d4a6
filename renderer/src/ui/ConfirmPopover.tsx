import { useId, useRef, type ReactNode } from 'react';
import { useFocusTrap } from './focus-trap.js';

interface Props {
  label: string;
  /** What will happen, in words (the dialog's description). */
  children: ReactNode;
  /** The destructive button (Remove, Stop): text, test id, disabled. */
  action: { text: string; testId: string; disabled?: boolean; onClick: () => void };
  onCancel: () => void;
  cancelDisabled?: boolean;
}

/**
 * A destructive confirmation (remove a sandbox, stop one with open terminals) as a modal alertdialog:
 * the focus goes to **Cancel** — the platform norm for destructive actions (GNOME HIG and macOS put the
 * default on the safe choice; WAI-ARIA's alertdialog example focuses the least destructive action), so a
 * stray Enter destroys nothing — Tab stays inside, Escape cancels, and the focus returns to the button
 * that asked.
 */
export function ConfirmPopover({ label, children, action, onCancel, cancelDisabled }: Props) {
  const ref = useRef<HTMLDivElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const describedBy = useId();
  useFocusTrap(ref, { initialFocus: () => cancel.current, onEscape: () => !cancelDisabled && onCancel() });
  return (
    <div ref={ref} className="confirm" role="alertdialog" aria-modal="true" aria-label={label} aria-describedby={describedBy}>
      <span id={describedBy}>{children}</span>
      <button className="btn btn-danger" data-testid={action.testId} disabled={action.disabled} onClick={action.onClick}>
        {action.text}
      </button>
      <button ref={cancel} className="btn" data-testid="confirm-cancel" disabled={cancelDisabled} onClick={onCancel}>
        Cancel
      </button>
    </div>
  );
}
