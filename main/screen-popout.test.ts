import { describe, expect, it } from 'vitest';
import { isScreenPopOut } from './screen-popout.js';

const APP = 'file:///opt/sandbox-desk/dist/renderer/index.html';

describe('isScreenPopOut', () => {
  it("allows the app's own page with just ?screen=NAME", () => {
    expect(isScreenPopOut(`${APP}?screen=my%20box`, APP)).toBe(true);
  });

  it('refuses anything else: another file, another scheme, extra parameters, no name', () => {
    expect(isScreenPopOut('file:///etc/passwd?screen=x', APP)).toBe(false);
    expect(isScreenPopOut('https://example.com/?screen=x', APP)).toBe(false);
    expect(isScreenPopOut(`${APP}?screen=x&token=y`, APP)).toBe(false);
    expect(isScreenPopOut(`${APP}?screen=`, APP)).toBe(false);
    expect(isScreenPopOut(APP, APP)).toBe(false);
    expect(isScreenPopOut('not a url', APP)).toBe(false);
  });
});
