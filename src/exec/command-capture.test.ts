import { describe, expect, it } from 'vitest';
import { CommandCapture } from './command-capture.js';

const N = 'sd0123456789abcdef';
const f = (...fields: string[]) => ({ nonce: N, fields });

describe('CommandCapture', () => {
  it('takes a well-formed start, end and stderr-complete frame', () => {
    const c = new CommandCapture(N, 1024);
    c.frame(f('S', '42', 'missing', '/a:b'));
    c.frame(f('E', '3', 'ok', '/x'));
    c.frame(f('X'));
    expect(c.complete).toBe(true);
    expect(c.result(null, null)).toMatchObject({
      start: { pid: 42, why: 'missing', used: '/a:b' },
      end: { exitCode: 3, state: 'ok', cwd: '/x' },
      framingBroken: null,
    });
  });

  it.each([
    [f('E', 'NaN', 'ok', '/x'), /malformed end/],
    [f('E', '0', 'weird', '/x'), /malformed end/],
    [f('E', '0', 'ok', 'relative'), /malformed end/],
    [f('S', '0', 'ok', '/x'), /malformed start/],
    [f('S', '12', 'because', '/x'), /malformed start/],
    [f('Q', 'x'), /unknown frame/],
  ])('marks the framing broken for %j instead of trusting it', (frame, why) => {
    const c = new CommandCapture(N, 1024);
    c.frame(frame);
    expect(c.end).toBeNull();
    expect(c.result(null, null).framingBroken).toMatch(why);
  });

  it('keeps the first end frame and marks a second one broken', () => {
    const c = new CommandCapture(N, 1024);
    c.frame(f('E', '0', 'ok', '/first'));
    c.frame(f('E', '0', 'ok', '/forged'));
    expect(c.end?.cwd).toBe('/first');
    expect(c.framingBroken).toBe('a second end frame');
  });

  it("decodes the transport's stderr once, so a character split across chunks stays whole", () => {
    const c = new CommandCapture(N, 1024);
    const bytes = Buffer.from('Error: “no”');
    c.stderrPayload(bytes.subarray(0, 8));
    c.stderrPayload(bytes.subarray(8));
    expect(c.result(null, null).transportError).toBe('Error: “no”');
  });
});
