import { describe, it, expect } from 'vitest';
import { BoundedBuffer } from './bounded-buffer.js';

describe('BoundedBuffer', () => {
  it('keeps everything below the limit and is not truncated', () => {
    const b = new BoundedBuffer(10);
    b.push(Buffer.from('abc'));
    b.push(Buffer.from('def'));
    expect(b.bytes().toString()).toBe('abcdef');
    expect(b.truncated).toBe(false);
  });

  it('keeps exactly the limit without counting as truncated', () => {
    const b = new BoundedBuffer(6);
    b.push(Buffer.from('abc'));
    b.push(Buffer.from('def'));
    expect(b.bytes().toString()).toBe('abcdef');
    expect(b.truncated).toBe(false);
  });

  it('keeps the first limit bytes of a chunk that crosses the limit and sets truncated', () => {
    const b = new BoundedBuffer(4);
    b.push(Buffer.from('ab'));
    b.push(Buffer.from('cdef'));
    expect(b.bytes().toString()).toBe('abcd');
    expect(b.truncated).toBe(true);
  });

  it('drops chunks arriving after the limit and sets truncated', () => {
    const b = new BoundedBuffer(3);
    b.push(Buffer.from('abc'));
    expect(b.truncated).toBe(false);
    b.push(Buffer.from('d'));
    expect(b.bytes().toString()).toBe('abc');
    expect(b.truncated).toBe(true);
  });

  it('does not set truncated for an empty chunk once full', () => {
    const b = new BoundedBuffer(3);
    b.push(Buffer.from('abc'));
    b.push(Buffer.alloc(0));
    expect(b.truncated).toBe(false);
  });

  it('keeps nothing with a limit of 0 and notes any bytes as truncated', () => {
    const b = new BoundedBuffer(0);
    b.push(Buffer.from('x'));
    expect(b.bytes().length).toBe(0);
    expect(b.truncated).toBe(true);
  });

  it('never holds more than the limit across many chunks', () => {
    const b = new BoundedBuffer(1000);
    for (let i = 0; i < 500; i++) b.push(Buffer.alloc(7, i));
    expect(b.bytes().length).toBe(1000);
    expect(b.truncated).toBe(true);
  });

  it('keeps binary bytes exactly', () => {
    const data = Buffer.from([...Array(256).keys()]);
    const b = new BoundedBuffer(1024);
    b.push(data);
    expect(b.bytes().equals(data)).toBe(true);
  });

  it('copies a chunk: mutating the source after push does not change the stored bytes', () => {
    const src = Buffer.from('hello');
    const b = new BoundedBuffer(100);
    b.push(src);
    src.fill(0x78);
    expect(b.bytes().toString()).toBe('hello');
  });

  it('copies a chunk it cuts at the limit, too', () => {
    const src = Buffer.from('hello world');
    const b = new BoundedBuffer(5);
    b.push(src);
    src.fill(0x78);
    expect(b.bytes().toString()).toBe('hello');
  });

  it('copies a view into a larger buffer that the caller reuses', () => {
    const pool = Buffer.from('abcdefgh');
    const b = new BoundedBuffer(100);
    b.push(pool.subarray(2, 5));
    pool.write('XXXXXXXX');
    expect(b.bytes().toString()).toBe('cde');
  });
});
