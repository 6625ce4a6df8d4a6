import { describe, expect, it } from 'vitest';
import { didYouMean, editDistance } from './did-you-mean.js';

const images = ['sandbox-desk/base:latest', 'sandbox-desk/desktop:latest', 'sandbox-desk/sshd:latest', 'debian-test'];

describe('didYouMean', () => {
  it('measures edits, a swap of neighbours as one', () => {
    expect(editDistance('docker', 'dokcer')).toBe(1);
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('suggests the close image for a typo, with or without :latest', () => {
    expect(didYouMean('sandbox-desk/destkop', images)).toBe('sandbox-desk/desktop:latest');
    expect(didYouMean('sandbox-desk/bse:latest', images)).toBe('sandbox-desk/base:latest');
    expect(didYouMean('debain-test', images)).toBe('debian-test');
  });

  it('suggests the full name for one given without its repository', () => {
    expect(didYouMean('desktop', images)).toBe('sandbox-desk/desktop:latest');
  });

  it('suggests nothing for an exact name or one that is far from all', () => {
    expect(didYouMean('sandbox-desk/base', images)).toBeNull();
    expect(didYouMean('ubuntu:24.04', images)).toBeNull();
    expect(didYouMean('sandbox-desk/nope:latest', images)).toBeNull();
    expect(didYouMean('', images)).toBeNull();
  });
});
