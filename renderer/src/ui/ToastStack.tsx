import type { ReactNode } from 'react';
import { createPortal } from 'react-dom';

/**
 * Every toast of the window in one corner stack (a column with a gap, newest at the bottom): each drop
 * zone (terminal, screen, details, file panel) had its own fixed toast at the same spot, so two uploads'
 * toasts lay on top of each other.
 */
function stack(): HTMLElement {
  let el = document.getElementById('toast-stack');
  if (!el) {
    el = document.createElement('div');
    el.id = 'toast-stack';
    el.className = 'toast-stack';
    el.setAttribute('data-testid', 'toast-stack');
    document.body.appendChild(el);
  }
  return el;
}

export function Toast({ children }: { children: ReactNode }) {
  return createPortal(children, stack());
}
