import { describe, expect, it } from 'vitest';
import { ScrollbackBuffer } from './scrollback-buffer.js';

describe('ScrollbackBuffer', () => {
  it('keeps everything while under its limit, in order', () => {
    const b = new ScrollbackBuffer(100);
    b.push(Buffer.from('one\r\n'));
    b.push(Buffer.from('two\r\n'));
    expect(b.snapshot().toString()).toBe('one\r\ntwo\r\n');
    expect(b.size).toBe(10);
  });

  it('never holds more than its limit: the oldest output goes first', () => {
    const b = new ScrollbackBuffer(64);
    for (let i = 0; i < 1000; i++) b.push(Buffer.from(`line ${i}\r\n`));
    expect(b.size).toBeLessThanOrEqual(64);
    const text = b.snapshot().toString();
    expect(text.endsWith('line 999\r\n')).toBe(true);
    expect(text).not.toContain('line 1\r\n');
  });

  it('a cut lands after a line break, never inside an escape sequence', () => {
    const b = new ScrollbackBuffer(30);
    b.push(Buffer.from('\x1b[38;5;196mred text here\x1b[0m\r\n'));
    b.push(Buffer.from('next line\r\n'));
    b.push(Buffer.from('last\r\n'));
    const text = b.snapshot().toString();
    expect(text).toBe('next line\r\nlast\r\n');
  });

  it('one chunk bigger than the limit keeps its tail from a line start', () => {
    const b = new ScrollbackBuffer(16);
    b.push(Buffer.from('aaaaaaaaaaaaaaaaaaaaaaaa\nbbbb\ncc'));
    expect(b.snapshot().toString()).toBe('bbbb\ncc');
  });

  it('a snapshot is a copy, and clear empties it', () => {
    const b = new ScrollbackBuffer(100);
    b.push(Buffer.from('x\n'));
    const s = b.snapshot();
    b.push(Buffer.from('y\n'));
    expect(s.toString()).toBe('x\n');
    b.clear();
    expect(b.size).toBe(0);
    expect(b.snapshot().length).toBe(0);
  });

  it('refuses a limit that is not a positive integer', () => {
    expect(() => new ScrollbackBuffer(0)).toThrow(/positive integer/);
  });
});

describe('ScrollbackBuffer under a flood', () => {
  it('output with no line breaks is still bounded (a plain cut)', () => {
    const b = new ScrollbackBuffer(1000);
    for (let i = 0; i < 500; i++) b.push(Buffer.alloc(100, 0x61));
    expect(b.size).toBe(1000);
  });
});
