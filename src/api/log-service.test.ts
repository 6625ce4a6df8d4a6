import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rejectsWith } from '../../test/expect-error.js';
import type { LogCapability } from '../sandbox/observability.js';
import type { SandboxProvider, SandboxRef } from '../sandbox/provider.js';
import { LogService } from './log-service.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const ref: SandboxRef = { name: 'logs-unit', backendRef: 'c1', image: null, user: null, mounts: [], env: {}, options: {} };

/** A backend with one log that exists (`container`) and one that does not (`serial`). */
function service(opts: { logs?: boolean; appLog?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'sdesk-log-service-'));
  dirs.push(dir);
  const appLogFile = join(dir, 'sandbox-desk.log');
  if (opts.appLog !== false) writeFileSync(appLogFile, '{"msg":"one"}\n{"msg":"two"}\n');
  const logs: LogCapability<SandboxRef> = {
    sources: async () => [
      { id: 'container', label: 'Container output', exists: true, detail: 'docker logs c1' },
      { id: 'serial', label: 'Serial', exists: false, detail: 'not booted yet' },
    ],
    read: async (_r, source, tail) => `${source} last ${tail}\n`,
    follow: async (_r, _s, _t, to) => {
      to.onData('followed\n');
      return { dispose: () => undefined };
    },
  };
  const provider = {
    name: 'fake',
    supportsStreams: false,
    ...(opts.logs === false ? {} : { logs }),
    status: async () => ({ state: 'running', incarnation: 'x' }),
  } as unknown as SandboxProvider;
  return new LogService({
    target: async (name) => {
      if (name !== ref.name) throw new Error(`no sandbox ${name}`);
      return { ref, provider };
    },
    desktopLogs: () => Promise.reject(new Error('no desktop here')),
    appLogFile,
  });
}

describe('LogService', () => {
  it('lists the backend sources and the app log, each saying whether it exists', async () => {
    const s = await service().sources('logs-unit');
    expect(s.map((x) => [x.id, x.kind, x.exists])).toEqual([
      ['container', 'backend', true],
      ['serial', 'backend', false],
      ['app', 'app', true],
    ]);
  });

  it('reads the backend log by default, and the app log by name', async () => {
    const svc = service();
    expect(await svc.read('logs-unit', undefined, 5)).toEqual({
      sandbox: 'logs-unit',
      source: 'container',
      text: 'container last 5\n',
      tail: 5,
    });
    expect((await svc.read('logs-unit', 'app', 1)).text).toBe('{"msg":"two"}\n');
  });

  it('refuses an unknown source, naming the sources that exist', async () => {
    const e = await rejectsWith(service().read('logs-unit', 'nope', 5), 'not_found');
    expect(e.message).toBe('sandbox logs-unit has no log source "nope"');
    expect(e.hint).toMatch(/sources that exist: container, app/);
  });

  it('refuses a known source that is not there, saying why and what exists', async () => {
    const e = await rejectsWith(service().read('logs-unit', 'serial', 5), 'not_found');
    expect(e.message).toMatch(/log source serial of sandbox logs-unit does not exist: not booted yet/);
    expect(e.hint).toMatch(/container, app/);
  });

  it('says there are no logs yet when nothing exists', async () => {
    const e = await rejectsWith(service({ logs: false, appLog: false }).read('logs-unit', undefined, 5), 'not_found');
    expect(e.message).toMatch(/has no logs yet/);
  });

  it('follows through the backend', async () => {
    let got = '';
    const sub = await service().follow('logs-unit', undefined, 10, { onData: (t) => (got += t), onEnd: () => undefined });
    expect(sub.source).toBe('container');
    expect(got).toBe('followed\n');
    sub.dispose();
  });
});
