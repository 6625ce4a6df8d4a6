import { describe, expect, it } from 'vitest';
import { didYouMean, editDistance, nearestNames, unknownNameHint } from './did-you-mean.js';

describe('editDistance (optimal string alignment)', () => {
  it.each([
    ['docker', 'docker', 0],
    ['dokcer', 'docker', 1],
    ['dcoker', 'docker', 1],
    ['docke', 'docker', 1],
    ['dockerr', 'docker', 1],
    ['qemu', 'docker', 6],
    ['', 'abc', 3],
    ['abc', '', 3],
  ])('%s → %s is %i', (a, b, n) => {
    expect(editDistance(a, b)).toBe(n);
  });
});

describe('nearestNames / didYouMean', () => {
  const backends = ['local', 'docker', 'qemu', 'ssh', 'podman'];
  it('suggests docker for the swapped dokcer', () => {
    expect(didYouMean('dokcer', backends)).toBe('did you mean docker?');
  });
  it('ignores case for the distance but suggests the real spelling', () => {
    expect(nearestNames('DOCKER', backends)).toEqual(['docker']);
    expect(nearestNames('Qemu', backends)).toEqual(['qemu']);
  });
  it('suggests nothing for a word far from every candidate', () => {
    expect(didYouMean('kubernetes', backends)).toBeUndefined();
    expect(didYouMean('', backends)).toBeUndefined();
  });
  it('lists every candidate at the same smallest distance, joined with "or"', () => {
    expect(didYouMean('rn', ['rm', 'rx', 'list'])).toBe('did you mean rm or rx?');
  });
  it('counts a typed prefix as near', () => {
    expect(nearestNames('insp', ['inspect', 'list', 'start'])).toEqual(['inspect']);
  });
  it('a short word allows one edit, a longer one a third of its length', () => {
    expect(nearestNames('lst', ['list'])).toEqual(['list']);
    expect(nearestNames('exex', ['exec'])).toEqual(['exec']);
    expect(nearestNames('shell.idlems', ['shell.idleMs'])).toEqual(['shell.idleMs']);
    expect(nearestNames('sndbx', ['sandbox'])).toEqual(['sandbox']);
    expect(nearestNames('xyz', ['ab'])).toEqual([]);
  });
});

describe('unknownNameHint', () => {
  it('puts the suggestion first, then every valid name', () => {
    expect(unknownNameHint('dokcer', ['local', 'docker'], 'available backends')).toBe(
      'did you mean docker? (available backends: local, docker)',
    );
  });
  it('without a near name, only the valid names', () => {
    expect(unknownNameHint('zzz', ['local', 'docker'], 'available backends')).toBe('available backends: local, docker');
  });
  it('says when there is nothing to choose from', () => {
    expect(unknownNameHint('x', [], 'available sandboxes')).toBe('there are no sandboxes yet');
  });
});
