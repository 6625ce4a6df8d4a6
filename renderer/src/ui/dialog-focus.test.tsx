import '../test/setup.js';
import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from '../app/App.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';

// The app's dialogs (create, images) trap the focus and give it back to the control that opened them.
describe('dialog focus', () => {
  for (const [opener, dialog] of [
    ['create-sandbox', 'New sandbox'],
    ['open-images', 'Images'],
  ] as const) {
    it(`${dialog}: focus moves in, Tab stays inside, Escape returns it to the opener`, async () => {
      const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'alpha', state: 'running' })] });
      render(<App api={api} />);
      const button = await screen.findByTestId(opener);
      button.focus();
      fireEvent.click(button);
      const d = await screen.findByRole('dialog', { name: dialog });
      expect(d.contains(document.activeElement)).toBe(true);
      for (let i = 0; i < 25; i++) {
        fireEvent.keyDown(document.activeElement!, { key: 'Tab', shiftKey: i % 3 === 0 });
        expect(d.contains(document.activeElement)).toBe(true);
      }
      fireEvent.keyDown(document.activeElement!, { key: 'Escape' });
      expect(screen.queryByRole('dialog', { name: dialog })).toBeNull();
      expect(document.activeElement).toBe(button);
    });
  }
});
