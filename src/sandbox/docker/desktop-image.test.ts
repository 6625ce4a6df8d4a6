import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../platform/project-root.js';
import {
  DESKTOP_RUN,
  chromiumPolicyRun,
  derivedDockerfile,
  derivedTag,
  ensureDesktopImage,
  isDebianLike,
  parseOsRelease,
} from './desktop-image.js';
import type { DockerImages } from './docker-images.js';

describe('the derived desktop image', () => {
  it("its RUN is the desktop image's, byte for byte (so a sandbox-desk/base base hits Docker's layer cache)", () => {
    const dockerfile = readFileSync(join(projectRoot(), 'resources/images/desktop/Dockerfile'), 'utf8');
    expect(dockerfile).toContain(DESKTOP_RUN);
  });

  it('is FROM the base, as root for the packages, then back to the base user', () => {
    const text = derivedDockerfile('my/img:1', 'agent');
    expect(text).toMatch(/^FROM my\/img:1$/m);
    expect(text.indexOf('USER root')).toBeLessThan(text.indexOf('RUN apt-get'));
    expect(text.trim().split('\n').at(-1)).toBe('USER agent');
    expect(derivedDockerfile('x', null)).toMatch(/USER root\n$/);
  });

  it("carries the desktop image's managed Chromium policy, written where Chromium reads it (issue 36)", () => {
    const text = derivedDockerfile('my/img:1', 'agent');
    const m = /^ && printf '%s\\n' '(.+)' > \/etc\/chromium\/policies\/managed\/sandbox-desk\.json$/m.exec(text);
    const file = readFileSync(join(projectRoot(), 'resources/images/desktop/chromium-policy.json'), 'utf8');
    expect(JSON.parse(m![1]!)).toEqual(JSON.parse(file));
    // After the packages (Chromium's), as root.
    expect(text.indexOf('/etc/chromium/policies/managed')).toBeGreaterThan(text.indexOf(DESKTOP_RUN));
    expect(text.indexOf('/etc/chromium/policies/managed')).toBeLessThan(text.lastIndexOf('USER agent'));
    // A single quote would end the shell's quoting early: refused rather than written broken.
    expect(() => chromiumPolicyRun('{"HomepageLocation":"it\'s"}')).toThrow(/single quote/);
  });

  it('is named by the base image id and the Dockerfile: same inputs, same tag', () => {
    const a = derivedTag('sha256:1', 'FROM x');
    expect(a).toMatch(/^sandbox-desk\/derived-desktop:[0-9a-f]{16}$/);
    expect(derivedTag('sha256:1', 'FROM x')).toBe(a);
    expect(derivedTag('sha256:2', 'FROM x')).not.toBe(a);
    expect(derivedTag('sha256:1', 'FROM y')).not.toBe(a);
  });

  it('reads /etc/os-release; Debian, Ubuntu and their derivatives pass', () => {
    const os = parseOsRelease('PRETTY_NAME="Alpine Linux v3.20"\nID=alpine\n');
    expect(os).toEqual({ PRETTY_NAME: 'Alpine Linux v3.20', ID: 'alpine' });
    expect(isDebianLike(os)).toBe(false);
    expect(isDebianLike(parseOsRelease('ID=debian\n'))).toBe(true);
    expect(isDebianLike(parseOsRelease('ID=ubuntu\nID_LIKE=debian\n'))).toBe(true);
    expect(isDebianLike(parseOsRelease('ID=linuxmint\nID_LIKE="ubuntu debian"\n'))).toBe(true);
  });

  // The engine is faked here (the integration test builds for real): what is decided before any build.
  const fakeImages = (have: Record<string, { Id: string; Config: { User?: string; Labels?: Record<string, string> } }>) => {
    const builds: string[] = [];
    const images = {
      inspect: (ref: string) => Promise.resolve(have[ref] ?? null),
      build: (o: { tag: string }) => {
        builds.push(o.tag);
        return Promise.resolve({ id: 'sha256:new' });
      },
    } as unknown as DockerImages;
    return { images, builds };
  };

  it('refuses a base that is not Debian/Ubuntu, naming what its os-release says; builds nothing', async () => {
    const { images, builds } = fakeImages({ 'alpine:3': { Id: 'sha256:a', Config: {} } });
    const osRelease = () => Promise.resolve('PRETTY_NAME="Alpine Linux v3.20"\nID=alpine\n');
    await expect(ensureDesktopImage({ images, osRelease }, 'alpine:3', () => undefined)).rejects.toThrow(
      /--desktop needs a Debian- or Ubuntu-based image; alpine:3 is not: its \/etc\/os-release says Alpine Linux v3.20/,
    );
    await expect(ensureDesktopImage({ images, osRelease: () => Promise.resolve(null) }, 'alpine:3', () => undefined)).rejects.toThrow(
      /it has no readable \/etc\/os-release/,
    );
    expect(builds).toEqual([]);
  });

  it('uses an image that has the desktop already, and a derived image built before, without building', async () => {
    const base = { Id: 'sha256:b', Config: { User: 'agent' } };
    const tag = derivedTag('sha256:b', derivedDockerfile('b:1', 'agent'));
    const { images, builds } = fakeImages({
      'd:1': { Id: 'sha256:d', Config: { Labels: { 'io.sandbox-desk.display-user': 'sdesk-display' } } },
      'b:1': base,
      [tag]: { Id: 'sha256:c', Config: {} },
    });
    const osRelease = () => Promise.resolve('ID=debian\n');
    expect(await ensureDesktopImage({ images, osRelease }, 'd:1', () => undefined)).toBe('d:1');
    expect(await ensureDesktopImage({ images, osRelease }, 'b:1', () => undefined)).toBe(tag);
    expect(builds).toEqual([]);
  });
});
