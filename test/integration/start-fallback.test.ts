/**
 * `npm start` where the Electron binary is missing (faked with SANDBOX_DESK_ELECTRON_BINARY pointing at
 * nothing): one line says so, the browser mode starts, its URL answers, and xdg-open is handed the URL
 * when present (a stand-in on PATH records it) — and its absence is not a failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const START = join(ROOT, 'dist', 'main', 'start-app.js');

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tmp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Starts the script; resolves with its stderr lines so far and the URL it printed. */
async function start(pathEnv: string): Promise<{ child: ChildProcess; url: string; stderr: string[] }> {
  const home = tmp('sdesk-start-home-');
  const child = spawn(process.execPath, [START, '--port', '0'], {
    env: {
      ...process.env,
      SANDBOX_DESK_HOME: home,
      SANDBOX_DESK_ELECTRON_BINARY: join(home, 'no-electron-here'),
      PATH: pathEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await gone;
  });
  const stderr: string[] = [];
  createInterface({ input: child.stderr }).on('line', (l) => stderr.push(l));
  const url = await new Promise<string>((res, rej) => {
    createInterface({ input: child.stdout }).on('line', (l) => {
      const m = /^\s+(http:\/\/127\.0\.0\.1:\d+\/\S*)$/.exec(l);
      if (m) res(m[1]!);
    });
    child.once('exit', (code) => rej(new Error(`start-app exited ${code}: ${stderr.join('\n')}`)));
  });
  return { child, url, stderr };
}

describe('npm start without the Electron binary', () => {
  it('says so in one line, serves the browser mode and hands the URL to xdg-open', async () => {
    const bin = tmp('sdesk-start-bin-');
    const record = join(bin, 'opened-url');
    writeFileSync(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > '${record}'\n`);
    chmodSync(join(bin, 'xdg-open'), 0o755);
    const { url, stderr } = await start(`${bin}:${process.env.PATH ?? ''}`);
    expect(stderr.filter((l) => /electron/i.test(l))).toEqual([
      expect.stringMatching(/Electron binary is not installed .* starting the browser mode instead$/),
    ]);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    await expect.poll(() => existsSync(record) && readFileSync(record, 'utf8'), { timeout: 10_000 }).toBe(url);
  });

  it('carries on when xdg-open is not on PATH', async () => {
    const empty = tmp('sdesk-start-nopath-');
    const { child, url, stderr } = await start(empty);
    expect((await fetch(url)).status).toBe(200);
    expect(stderr).toContain('(xdg-open not found: open the URL above in a browser)');
    expect(child.exitCode).toBeNull();
  });
});
