import { describe, expect, it } from 'vitest';
import { loadScreenMode, popOutUrl, rfbSettings, saveScreenMode, screenOnlySandbox } from './screen-view-mode.js';

const memory = () => {
  const m = new Map<string, string>();
  return { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v) };
};

describe('screen view mode', () => {
  it('defaults to resizing the remote desktop to the pane; the choice is remembered', () => {
    const s = memory();
    expect(loadScreenMode(s)).toBe('resize');
    saveScreenMode('actual', s);
    expect(loadScreenMode(s)).toBe('actual');
  });

  it('an unknown saved value, or storage that throws, falls back to the default', () => {
    const s = memory();
    s.setItem('sdesk.screenMode', 'zoom-400');
    expect(loadScreenMode(s)).toBe('resize');
    const refusing = {
      getItem: () => {
        throw new Error('denied');
      },
    };
    expect(loadScreenMode(refusing)).toBe('resize');
  });

  it('tells noVNC: fit scales, 1:1 neither scales nor clips (the pane scrolls), resize asks only with control', () => {
    expect(rfbSettings('fit', false)).toEqual({ scaleViewport: true, clipViewport: false, resizeSession: false });
    expect(rfbSettings('actual', false)).toEqual({ scaleViewport: false, clipViewport: false, resizeSession: false });
    expect(rfbSettings('resize', false)).toMatchObject({ resizeSession: true });
    expect(rfbSettings('resize', true)).toMatchObject({ resizeSession: false, scaleViewport: true });
  });

  it('the pop-out address names the sandbox and carries no ticket (the new tab asks for its own)', () => {
    const url = popOutUrl('my box', 'http://127.0.0.1:5000/?token=abc#x');
    expect(url).toBe('http://127.0.0.1:5000/?screen=my%20box');
    expect(popOutUrl('a', 'file:///opt/sd/renderer/index.html')).toBe('file:///opt/sd/renderer/index.html?screen=a');
    expect(url).not.toMatch(/ticket/);
    expect(screenOnlySandbox('?screen=my%20box')).toBe('my box');
    expect(screenOnlySandbox('?token=abc')).toBeNull();
  });
});
