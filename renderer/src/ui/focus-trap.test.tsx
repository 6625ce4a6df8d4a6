import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { useRef, useState } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useFocusTrap } from './focus-trap.js';

function Dialog({ onClose, initial }: { onClose: () => void; initial?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  const safe = useRef<HTMLButtonElement>(null);
  useFocusTrap(ref, { onEscape: onClose, ...(initial ? { initialFocus: () => safe.current } : {}) });
  return (
    <div ref={ref} role="dialog" aria-label="d">
      <input aria-label="first" />
      <button>middle</button>
      <button ref={safe} onClick={onClose}>
        last
      </button>
    </div>
  );
}

function Page({ initial }: { initial?: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button onClick={() => setOpen(true)}>opener</button>
      <button>behind</button>
      {open && <Dialog onClose={() => setOpen(false)} initial={initial} />}
    </>
  );
}

const tab = (shift = false) => fireEvent.keyDown(document.activeElement ?? document.body, { key: 'Tab', shiftKey: shift });

afterEach(cleanup);

describe('useFocusTrap', () => {
  it('moves focus in, cycles Tab inside, and returns focus to the opener on close', () => {
    render(<Page />);
    const opener = screen.getByText('opener');
    opener.focus();
    fireEvent.click(opener);
    expect(document.activeElement).toBe(screen.getByLabelText('first'));
    tab();
    expect(document.activeElement).toBe(screen.getByText('middle'));
    tab();
    tab();
    expect(document.activeElement).toBe(screen.getByLabelText('first'));
    tab(true);
    expect(document.activeElement).toBe(screen.getByText('last'));
    fireEvent.keyDown(document.activeElement!, { key: 'Escape' });
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(document.activeElement).toBe(opener);
  });

  it('focus that escapes behind the dialog is brought back', () => {
    render(<Page />);
    fireEvent.click(screen.getByText('opener'));
    act(() => screen.getByText('behind').focus());
    expect(screen.getByRole('dialog').contains(document.activeElement)).toBe(true);
  });

  it('initialFocus picks the button (the safe one of a destructive confirmation)', () => {
    render(<Page initial />);
    fireEvent.click(screen.getByText('opener'));
    expect(document.activeElement).toBe(screen.getByText('last'));
  });

  it('a companion region outside the dialog is in the Tab cycle', () => {
    const onClose = vi.fn();
    render(
      <>
        <Dialog onClose={onClose} />
        <div data-dialog-companion>
          <button>cancel-op</button>
        </div>
      </>,
    );
    screen.getByText('last').focus();
    tab();
    expect(document.activeElement).toBe(screen.getByText('cancel-op'));
    act(() => screen.getByText('cancel-op').focus());
    expect(document.activeElement).toBe(screen.getByText('cancel-op'));
  });
});
