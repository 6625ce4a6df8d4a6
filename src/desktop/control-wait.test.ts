import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../store/store.js';
import { waitForControl, type ControlWaitSource } from './control-wait.js';

/** Two Stores on one data dir are two processes' connections (the window's and an MCP server's). */
describe('waitForControl', () => {
  let dir: string;
  let agentSide: Store;
  let windowSide: Store;
  const source = (s: Store, pollMs = 20): ControlWaitSource => ({
    read: (sb) => s.leases.get(sb),
    onChanged: s.leases.onChanged,
    dataVersion: () => s.leases.dataVersion(),
    pollMs,
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sdesk-control-wait-'));
    agentSide = Store.open(dir);
    windowSide = Store.open(dir);
    agentSide.sandboxes.insert({
      name: 's',
      backend: 'docker',
      image: null,
      user: null,
      declaredDefaultCwd: null,
      backendRef: null,
      mounts: [],
      env: {},
      options: {},
      createdAt: 'now',
      home: null,
      homeIncarnation: null,
      lastObservedCwd: null,
      lastObservedAt: null,
    });
  });
  afterEach(() => {
    agentSide.close();
    windowSide.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers at once when nobody holds control', async () => {
    const w = await waitForControl('s', source(agentSide), 5000);
    expect(w).toMatchObject({ sandbox: 's', mayAct: true, holder: 'agent', timedOut: false });
    expect(w.waitedMs).toBeLessThan(50);
  });

  it('resolves when the person gives control back in this process, without waiting for a poll', async () => {
    agentSide.leases.acquire('s', 'viewer-1');
    const waiting = waitForControl('s', source(agentSide, 60_000), 5000);
    setTimeout(() => agentSide.leases.release('s', 'viewer-1'), 30);
    const w = await waiting;
    expect(w).toMatchObject({ mayAct: true, holder: 'agent', timedOut: false, reason: 'given back' });
    expect(w.waitedMs).toBeLessThan(1000);
  });

  it("resolves when another process gives control back (the database's change counter)", async () => {
    windowSide.leases.acquire('s', 'viewer-1');
    const waiting = waitForControl('s', source(agentSide), 5000);
    setTimeout(() => windowSide.leases.release('s', 'viewer-1'), 50);
    const w = await waiting;
    expect(w).toMatchObject({ mayAct: true, holder: 'agent', timedOut: false });
    expect(w.waitedMs).toBeLessThan(1000);
  });

  it('goes on waiting when control passes from one person to another', async () => {
    windowSide.leases.acquire('s', 'viewer-1');
    const waiting = waitForControl('s', source(agentSide), 300);
    setTimeout(() => windowSide.leases.acquire('s', 'viewer-2'), 30);
    const w = await waiting;
    expect(w).toMatchObject({ mayAct: false, holder: 'human', viewerId: 'viewer-2', timedOut: true });
  });

  it('answers a timeout (not an error) while the person keeps control', async () => {
    windowSide.leases.acquire('s', 'viewer-1');
    const w = await waitForControl('s', source(agentSide), 100);
    expect(w).toMatchObject({ mayAct: false, holder: 'human', viewerId: 'viewer-1', timedOut: true, reason: 'taken by a viewer' });
    expect(w.waitedMs).toBeGreaterThanOrEqual(95);
  });

  it('a timeout of 0 only reads', async () => {
    windowSide.leases.acquire('s', 'viewer-1');
    expect(await waitForControl('s', source(agentSide), 0)).toMatchObject({ mayAct: false, timedOut: true });
  });

  it('refuses a timeout it cannot honour, saying what it takes', () => {
    expect(() => waitForControl('s', source(agentSide), -1)).toThrow(/whole number of milliseconds 0–600000, got -1/);
    expect(() => waitForControl('s', source(agentSide), 600_001)).toThrow(/got 600001/);
  });
});
