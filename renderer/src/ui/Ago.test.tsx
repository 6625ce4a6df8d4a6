import '../test/setup.js';
import { act, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { clockListeners } from '../hooks/useNow.js';
import { Ago } from './Ago.js';

afterEach(() => vi.useRealTimers());

describe('relative time labels', () => {
  it('"41 s ago" keeps ticking, every label on one shared clock that stops with the last label', () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:41Z') });
    const spy = vi.spyOn(globalThis, 'setInterval');
    const { unmount } = render(
      <>
        <span data-testid="a">
          <Ago iso="2026-01-01T00:00:00Z" />
        </span>
        <span data-testid="b">
          <Ago iso="2026-01-01T00:00:30Z" />
        </span>
      </>,
    );
    expect(screen.getByTestId('a').textContent).toBe('41 s ago');
    act(() => void vi.advanceTimersByTime(5000));
    expect(screen.getByTestId('a').textContent).toBe('46 s ago');
    expect(screen.getByTestId('b').textContent).toBe('16 s ago');
    act(() => void vi.advanceTimersByTime(20_000));
    expect(screen.getByTestId('a').textContent).toBe('1 min ago');
    expect(spy).toHaveBeenCalledTimes(1);
    expect(clockListeners()).toBe(2);
    unmount();
    expect(clockListeners()).toBe(0);
    spy.mockRestore();
  });
});
