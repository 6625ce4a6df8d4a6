import '../test/setup.js';
import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { SplitView } from './SplitView.js';

describe('split view', () => {
  it('shows both panes and moves the divider with the keyboard (double-click resets it)', () => {
    render(<SplitView left={<div>screen</div>} right={<div>terminal</div>} initial={0.5} />);
    expect(screen.getByText('screen')).toBeTruthy();
    expect(screen.getByText('terminal')).toBeTruthy();
    const handle = screen.getByTestId('split-handle');
    const leftPane = handle.previousElementSibling as HTMLElement;
    expect(leftPane.style.flexBasis).toBe('50%');
    fireEvent.keyDown(handle, { key: 'ArrowRight' });
    expect(handle.getAttribute('aria-valuenow')).toBe('52');
    fireEvent.keyDown(handle, { key: 'ArrowLeft', shiftKey: true });
    expect(handle.getAttribute('aria-valuenow')).toBe('42');
    fireEvent.doubleClick(handle);
    expect(leftPane.style.flexBasis).toBe('50%');
  });
});
