import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { desktopLogSources, followDesktopLog, readDesktopLog, type DesktopLogLocation } from './desktop-logs.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The desktop's directory on this machine, reached through the local backend's exec prefix (as a sandbox would be). */
async function location(): Promise<DesktopLogLocation> {
  const dir = mkdtempSync(join(tmpdir(), 'sdesk-desktop-logs-'));
  dirs.push(dir);
  const env: SandboxEnvironment = await new LocalProvider().createEnvironment({
    cwd: '~',
    sandbox: { name: 'host', backendRef: null, image: null, user: null, mounts: [], env: {}, options: {} },
  });
  return { env, dir, user: undefined };
}

describe('desktop logs', () => {
  it('says which of the launcher, Xvnc, Xfce and Chromium logs are there, and reads the last lines', async () => {
    const at = await location();
    writeFileSync(join(at.dir, 'launcher.log'), 'one\ntwo\nthree\n');
    writeFileSync(join(at.dir, 'xvnc.log'), 'Xvnc started\n');
    const sources = await desktopLogSources(at);
    expect(sources.map((s) => [s.id, s.exists])).toEqual([
      ['desktop', true],
      ['desktop-xvnc', true],
      ['desktop-xfce', false],
      ['desktop-chromium', false],
    ]);
    expect(await readDesktopLog(at, 'desktop', 2)).toBe('two\nthree\n');
    await expect(readDesktopLog(at, 'desktop-xfce', 2)).rejects.toThrow(/cannot read/);
    await expect(readDesktopLog(at, 'bogus', 2)).rejects.toThrow(/no desktop log bogus/);
  });

  it('follows a log inside the sandbox until disposed', async () => {
    const at = await location();
    const file = join(at.dir, 'launcher.log');
    writeFileSync(file, 'old\n');
    let got = '';
    const sub = followDesktopLog(at, 'desktop', 5, { onData: (t) => (got += t), onEnd: () => undefined });
    while (!got.includes('old\n')) await new Promise((r) => setTimeout(r, 20));
    appendFileSync(file, 'new\n');
    while (!got.includes('new\n')) await new Promise((r) => setTimeout(r, 20));
    sub.dispose();
    expect(got).toBe('old\nnew\n');
  });
});
