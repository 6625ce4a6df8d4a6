import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { thrown } from '../../../test/expect-error.js';
import { onPath, requireHostTools } from './host-tools.js';

const bin = mkdtempSync(join(tmpdir(), 'sdesk-bin-'));
afterAll(() => rmSync(bin, { recursive: true, force: true }));
const fake = (name: string) => {
  writeFileSync(join(bin, name), '#!/bin/sh\n');
  chmodSync(join(bin, name), 0o755);
};

describe('requireHostTools', () => {
  it('names the missing programs and the packages that bring them', () => {
    fake('ssh');
    fake('ssh-keygen');
    const err = thrown(() => requireHostTools(bin));
    expect(err.code).toBe('backend_unavailable');
    expect(err.message).toBe('the qemu backend needs qemu-system-x86_64, qemu-img, which are not installed here');
    expect(err.hint).toBe('install qemu-system-x86 qemu-utils (`npm run setup` does: apt-get install -y qemu-system-x86 qemu-utils)');
  });

  it('passes when everything is there', () => {
    fake('qemu-system-x86_64');
    fake('qemu-img');
    expect(() => requireHostTools(bin)).not.toThrow();
    expect(onPath('qemu-img', `/nonexistent:${bin}`)).toBe(true);
    expect(onPath('nope', bin)).toBe(false);
  });
});
