import { describe, expect, it } from 'vitest';
import { noTokenPage, wantsPage } from './no-token-page.js';

describe('the no-token page', () => {
  it('is for a browser opening a page, not for API calls or command-line clients', () => {
    const html = 'text/html,application/xhtml+xml,*/*;q=0.8';
    expect(wantsPage('GET', '/', html)).toBe(true);
    expect(wantsPage('GET', '/desktop/box', html)).toBe(true);
    expect(wantsPage('GET', '/', '*/*')).toBe(false);
    expect(wantsPage('POST', '/api/call/listSandboxes', html)).toBe(false);
    expect(wantsPage('GET', '/assets/index.js', html)).toBe(false);
  });

  it('says how to get in: the printed link with its token, or a restart for a new one', () => {
    const page = noTokenPage();
    expect(page).toMatch(/^<!doctype html>/);
    expect(page).toContain('sandbox-desk serve');
    expect(page).toContain('?token=');
    expect(page).not.toContain('"error"');
  });
});
