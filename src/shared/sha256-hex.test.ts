import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from './sha256-hex.js';

const reference = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('sha256Hex: the same digest as node:crypto', () => {
  it('for the standard test vectors', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('at every length around the block and padding boundaries, and for multi-byte UTF-8', () => {
    // 55/56 bytes: where the length no longer fits the last block; 64, 119/120, 128: one and two blocks.
    for (let n = 0; n <= 200; n++) {
      const text = randomBytes(n)
        .toString('latin1')
        .replace(/[\u0080-\u00ff]/g, 'x');
      expect(sha256Hex(text), `length ${n}`).toBe(reference(text));
    }
    for (const text of ['/home/ünïcødé/.local/share/sandbox-desk', '数据目录/沙盒', '🦀'.repeat(40), 'line\nbreak\0nul'])
      expect(sha256Hex(text), text).toBe(reference(text));
  });
});
