import { useCallback, useRef, useState, type KeyboardEvent, type PointerEvent, type ReactNode } from 'react';

interface Props {
  left: ReactNode;
  right: ReactNode;
  /** Fraction of the width given to the left pane at first. */
  initial?: number;
  /** Neither pane gets narrower than this many pixels. */
  minPx?: number;
  storageKey?: string;
}

function loadFraction(key: string | undefined, fallback: number): number {
  if (!key) return fallback;
  try {
    const v = Number(localStorage.getItem(key));
    return v > 0.05 && v < 0.95 ? v : fallback;
  } catch {
    return fallback;
  }
}

/**
 * Two panes and a drag handle between them. Pointer capture keeps the drag alive over the noVNC
 * canvas and the terminal (which would otherwise swallow the move events); arrow keys move it too.
 */
export function SplitView({ left, right, initial = 0.58, minPx = 240, storageKey }: Props) {
  const [fraction, setFraction] = useState(() => loadFraction(storageKey, initial));
  const [dragging, setDragging] = useState(false);
  const box = useRef<HTMLDivElement>(null);

  const clamp = useCallback(
    (f: number) => {
      const width = box.current?.clientWidth ?? 0;
      if (width <= 2 * minPx) return Math.min(0.9, Math.max(0.1, f));
      return Math.min(1 - minPx / width, Math.max(minPx / width, f));
    },
    [minPx],
  );

  const commit = useCallback(
    (f: number) => {
      setFraction(f);
      try {
        if (storageKey) localStorage.setItem(storageKey, String(f));
      } catch {
        /* storage may be unavailable (file://, private mode): the split just is not remembered */
      }
    },
    [storageKey],
  );

  const onPointerDown = (e: PointerEvent<HTMLDivElement>) => {
    e.preventDefault();
    e.currentTarget.setPointerCapture(e.pointerId);
    setDragging(true);
  };
  const onPointerMove = (e: PointerEvent<HTMLDivElement>) => {
    if (!dragging || !box.current) return;
    const r = box.current.getBoundingClientRect();
    setFraction(clamp((e.clientX - r.left) / r.width));
  };
  const onPointerUp = (e: PointerEvent<HTMLDivElement>) => {
    if (!dragging) return;
    e.currentTarget.releasePointerCapture(e.pointerId);
    setDragging(false);
    commit(fraction);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const step = e.shiftKey ? 0.1 : 0.02;
    if (e.key === 'ArrowLeft') commit(clamp(fraction - step));
    else if (e.key === 'ArrowRight') commit(clamp(fraction + step));
    else return;
    e.preventDefault();
  };

  return (
    <div ref={box} className={`split${dragging ? ' split-dragging' : ''}`}>
      <div className="split-pane" style={{ flexBasis: `${fraction * 100}%` }}>
        {left}
      </div>
      <div
        className="split-handle"
        role="separator"
        aria-orientation="vertical"
        aria-valuenow={Math.round(fraction * 100)}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-label="Resize screen and terminal"
        tabIndex={0}
        data-testid="split-handle"
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={onPointerUp}
        onPointerCancel={onPointerUp}
        onDoubleClick={() => commit(initial)}
        onKeyDown={onKeyDown}
      />
      <div className="split-pane split-pane-right">{right}</div>
    </div>
  );
}
