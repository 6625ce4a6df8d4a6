import { describe, expect, it } from 'vitest';
import { closestImageName, didYouMean, editDistance, nearestNames, unknownNameHint } from './did-you-mean.js';

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

const images = ['sandbox-desk/base:latest', 'sandbox-desk/desktop:latest', 'sandbox-desk/sshd:latest', 'debian-test'];

describe('closestImageName', () => {
  it('suggests the close image for a typo, with or without :latest', () => {
    expect(closestImageName('sandbox-desk/destkop', images)).toBe('sandbox-desk/desktop:latest');
    expect(closestImageName('sandbox-desk/bse:latest', images)).toBe('sandbox-desk/base:latest');
    expect(closestImageName('debain-test', images)).toBe('debian-test');
  });

  it('suggests the full name for one given without its repository', () => {
    expect(closestImageName('desktop', images)).toBe('sandbox-desk/desktop:latest');
  });

  it('suggests nothing for an exact name or one that is far from all', () => {
    expect(closestImageName('sandbox-desk/base', images)).toBeNull();
    expect(closestImageName('ubuntu:24.04', images)).toBeNull();
    expect(closestImageName('sandbox-desk/nope:latest', images)).toBeNull();
    expect(closestImageName('', images)).toBeNull();
  });
});
