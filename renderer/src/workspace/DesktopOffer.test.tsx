import '../test/setup.js';
import { fireEvent, render, screen } from '@testing-library/react';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { App } from '../app/App.js';
import { desktopStatus, FakeApi, sandboxInfo } from '../test/fake-api.js';

// The workspace of a running sandbox opens a terminal and a screen: their browser-only libraries are stood in for.
vi.mock('@novnc/novnc', () => ({ default: class extends EventTarget {} }));
vi.mock('@xterm/xterm', () => ({
  Terminal: class {
    cols = 80;
    rows = 24;
    loadAddon() {}
    open() {}
    attachCustomKeyEventHandler() {}
    write() {}
    focus() {}
    dispose() {}
  },
}));
vi.mock('@xterm/addon-fit', () => ({
  FitAddon: class {
    fit() {}
  },
}));
vi.mock('@xterm/addon-attach', () => ({ AttachAddon: class {} }));
beforeEach(() => {
  vi.stubGlobal(
    'WebSocket',
    class extends EventTarget {
      binaryType = 'blob';
      close() {}
    },
  );
});

describe('a sandbox whose image has no desktop', () => {
  it('"Create a desktop sandbox" opens the create dialog with the desktop image filled in', async () => {
    const api = new FakeApi({
      sandboxes: [sandboxInfo({ name: 'plain', state: 'running' })],
      desktops: { plain: desktopStatus({ sandbox: 'plain', placement: 'sandbox', missing: ['Xvnc', 'xfwm4', 'chromium'] }) },
    });
    render(<App api={api} />);
    fireEvent.click(await screen.findByTestId('view-workspace'));
    fireEvent.click(await screen.findByTestId('create-desktop-sandbox'));
    const dialog = await screen.findByRole('dialog');
    expect((dialog.querySelector('[data-testid="create-image"]') as HTMLInputElement).value).toBe('sandbox-desk/desktop:latest');
  });
});
