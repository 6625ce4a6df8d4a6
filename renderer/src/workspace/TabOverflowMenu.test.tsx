import '../test/setup.js';
import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { TabOverflowMenu } from './TabOverflowMenu.js';

describe('TabOverflowMenu', () => {
  it('is not there for one tab; lists every tab with the active one checked, and closes on Escape', () => {
    const { rerender } = render(<TabOverflowMenu tabs={['a']} active="a" onActivate={() => undefined} />);
    expect(screen.queryByTestId('terminal-tab-menu')).toBeNull();
    const onActivate = vi.fn();
    rerender(<TabOverflowMenu tabs={['a', 'b']} active="b" onActivate={onActivate} />);
    fireEvent.click(screen.getByTestId('terminal-tab-menu'));
    expect(screen.getByTestId('terminal-tab-menu-b').getAttribute('aria-checked')).toBe('true');
    fireEvent.keyDown(screen.getByRole('menu'), { key: 'Escape' });
    expect(screen.queryByRole('menu')).toBeNull();
  });
});
