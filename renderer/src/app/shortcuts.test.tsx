import { renderHook } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { MENU_SHORTCUT_EVENT } from '../../../src/shared/ipc-channel.js';
import { useShortcuts } from './shortcuts.js';

describe('useShortcuts', () => {
  it('the Electron menu’s page action arrives like the key, and unknown actions are ignored', () => {
    const handler = vi.fn();
    const { unmount } = renderHook(() => useShortcuts(handler));
    window.dispatchEvent(new CustomEvent(MENU_SHORTCUT_EVENT, { detail: 'newSandbox' }));
    window.dispatchEvent(new CustomEvent(MENU_SHORTCUT_EVENT, { detail: 'rm -rf' }));
    window.dispatchEvent(new KeyboardEvent('keydown', { key: 'N', ctrlKey: true, shiftKey: true }));
    expect(handler.mock.calls).toEqual([['newSandbox'], ['newSandbox']]);
    unmount();
    window.dispatchEvent(new CustomEvent(MENU_SHORTCUT_EVENT, { detail: 'newSandbox' }));
    expect(handler).toHaveBeenCalledTimes(2);
  });
});
