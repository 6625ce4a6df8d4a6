import '../test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { useState } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { TerminalPane, type TerminalTabs } from './TerminalPane.js';
import { FakeApi, sessionInfo } from '../test/fake-api.js';
import { stubWebSocketEachTest } from '../test/terminal-stubs.js';

// xterm needs a real layout and canvas: stand-ins (shared in test/terminal-stubs.ts).
vi.mock('@xterm/xterm', () => import('../test/terminal-stubs.js').then((m) => m.xtermModule));
vi.mock('@xterm/addon-fit', () => import('../test/terminal-stubs.js').then((m) => m.fitAddonModule));
vi.mock('@xterm/addon-attach', () => import('../test/terminal-stubs.js').then((m) => m.attachAddonModule));
stubWebSocketEachTest();

function Stateful({ initial }: { initial: TerminalTabs }) {
  const [tabs, setTabs] = useState(initial);
  return (
    <TerminalPane
      sandbox="alpha"
      visible
      tabs={tabs}
      onAdd={() => undefined}
      onClose={() => undefined}
      onActivate={(s) => setTabs((t) => ({ ...t, active: s }))}
    />
  );
}

describe('terminal tab bar: keyboard, overflow, a readable cwd', () => {
  it('one tab stop; arrow keys, Home and End move the focus between tabs, Enter (a click) opens one', async () => {
    render(
      <ApiProvider api={new FakeApi()}>
        <Stateful initial={{ tabs: ['term-1', 'term-2', 'term-3'], active: 'term-1' }} />
      </ApiProvider>,
    );
    const tab = (n: number) => screen.getByTestId(`terminal-tab-term-${n}`);
    expect([1, 2, 3].map((n) => tab(n).tabIndex)).toEqual([0, -1, -1]);
    tab(1).focus();
    fireEvent.keyDown(tab(1), { key: 'ArrowRight' });
    await waitFor(() => expect(tab(2).tabIndex).toBe(0));
    expect(document.activeElement).toBe(tab(2));
    expect([1, 2, 3].map((n) => tab(n).tabIndex)).toEqual([-1, 0, -1]);
    fireEvent.keyDown(tab(2), { key: 'End' });
    await waitFor(() => expect(document.activeElement).toBe(tab(3)));
    fireEvent.keyDown(tab(3), { key: 'Home' });
    await waitFor(() => expect(document.activeElement).toBe(tab(1)));
    fireEvent.keyDown(tab(1), { key: 'End' });
    fireEvent.click(tab(3));
    await waitFor(() => expect(tab(3).getAttribute('aria-selected')).toBe('true'));
  });

  it('every tab is in the ⌄ menu (the bar shrinks tabs instead of scrolling); picking one activates it', async () => {
    render(
      <ApiProvider api={new FakeApi()}>
        <Stateful initial={{ tabs: ['term-1', 'a-very-long-session-name-for-an-agent'], active: 'term-1' }} />
      </ApiProvider>,
    );
    fireEvent.click(screen.getByTestId('terminal-tab-menu'));
    fireEvent.click(screen.getByTestId('terminal-tab-menu-a-very-long-session-name-for-an-agent'));
    await waitFor(() =>
      expect(screen.getByTestId('terminal-tab-a-very-long-session-name-for-an-agent').getAttribute('aria-selected')).toBe('true'),
    );
    expect(screen.queryByRole('menu')).toBeNull();
  });

  it('the cwd record keeps its last folder whole, with the full path as the title', async () => {
    const api = new FakeApi({ sessions: { alpha: [sessionInfo({ key: 'term-1', cwd: '/home/agent/projects/sandbox-desk/renderer' })] } });
    render(
      <ApiProvider api={api}>
        <Stateful initial={{ tabs: ['term-1'], active: 'term-1' }} />
      </ApiProvider>,
    );
    const path = await screen.findByTestId('terminal-cwd-path');
    expect(path.title).toBe('/home/agent/projects/sandbox-desk/renderer');
    expect(path.querySelector('.cwd-tail')?.textContent).toBe('renderer');
  });
});
