import '../test/setup.js';
import { act, render, screen, waitFor } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { FakeApi } from '../test/fake-api.js';
import { VncScreen } from './VncScreen.js';

// A stand-in RFB: records pastes, lets the test play the server's ServerCutText.
const rfbs = vi.hoisted(() => [] as Array<{ pasted: string[]; emit: (type: string, detail?: unknown) => void }>);
vi.mock('@novnc/novnc', () => ({
  default: class FakeRFB extends EventTarget {
    viewOnly = false;
    scaleViewport = false;
    clipViewport = false;
    resizeSession = false;
    background = '';
    pasted: string[] = [];
    constructor() {
      super();
      rfbs.push(this);
    }
    clipboardPasteFrom(text: string) {
      this.pasted.push(text);
    }
    emit(type: string, detail?: unknown) {
      this.dispatchEvent(new CustomEvent(type, { detail }));
    }
    disconnect() {}
  },
}));

let personClip = '';
const writes: string[] = [];
beforeEach(() => {
  rfbs.length = 0;
  writes.length = 0;
  personClip = '';
  Object.defineProperty(navigator, 'clipboard', {
    configurable: true,
    value: { readText: () => Promise.resolve(personClip), writeText: (t: string) => (writes.push(t), Promise.resolve()) },
  });
});
afterEach(() => vi.restoreAllMocks());

const api = () => {
  const a = new FakeApi();
  a.on('screenTicket', (p) => ({
    url: 'ws://127.0.0.1:1/ws/desktop/alpha?ticket=t',
    ticket: 't',
    viewerId: p.viewerId ?? 'v1',
    clipboardMaxBytes: 10,
  }));
  return a;
};
const shared = { api: api() };
beforeEach(() => (shared.api = api()));
const renderScreen = (viewOnly: boolean) =>
  render(
    <ApiProvider api={shared.api}>
      <VncScreen sandbox="alpha" viewerId="v1" viewOnly={viewOnly} mode="fit" onLink={() => undefined} onViewerId={() => undefined} />
    </ApiProvider>,
  );

describe('the screen clipboard', () => {
  it("copies the sandbox's cut text to the person's clipboard; over the cap it says so and leaves it", async () => {
    renderScreen(true);
    await waitFor(() => expect(rfbs).toHaveLength(1));
    await act(async () => rfbs[0]!.emit('clipboard', { text: 'short' }));
    await waitFor(() => expect(writes).toEqual(['short']));
    await act(async () => rfbs[0]!.emit('clipboard', { text: 'much too long text' }));
    expect((await screen.findByTestId('clipboard-notice')).textContent).toMatch(/sandbox copied 18 bytes, over the limit of 10/);
    expect(writes).toEqual(['short']);
  });

  it("pastes the person's clipboard on entering the screen only while holding control, within the cap", async () => {
    personClip = 'hello';
    const { rerender } = renderScreen(true);
    await waitFor(() => expect(rfbs).toHaveLength(1));
    await act(async () => {
      screen.getByTestId('vnc-screen').dispatchEvent(new Event('pointerenter'));
      await Promise.resolve();
    });
    expect(rfbs[0]!.pasted).toEqual([]);
    rerender(
      <ApiProvider api={shared.api}>
        <VncScreen sandbox="alpha" viewerId="v1" viewOnly={false} mode="fit" onLink={() => undefined} onViewerId={() => undefined} />
      </ApiProvider>,
    );
    await waitFor(() => expect(rfbs.at(-1)!.pasted).toEqual(['hello']), { timeout: 5000 });
    personClip = 'over the ten bytes';
    await act(async () => {
      window.dispatchEvent(new Event('focus'));
      await Promise.resolve();
    });
    expect((await screen.findByTestId('clipboard-notice')).textContent).toMatch(
      /Your clipboard holds 18 bytes, over the limit of 10: not pasted/,
    );
    expect(rfbs.at(-1)!.pasted).toEqual(['hello']);
  });
});
