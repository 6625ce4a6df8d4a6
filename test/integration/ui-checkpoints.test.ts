/**
 * The checkpoints panel in the real renderer (browser mode, Debian's Chromium) against the real core
 * and Docker engine: a checkpoint from the toolbar, one with a label from the panel, a restore with its
 * confirmation that brings a deleted project back. Saves docs/checkpoints-panel.png.
 */
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../../src/api/local-server.js';
import { uniqueName, type TestDesk } from './helpers.js';
import { openUi, type UiHarness } from './ui-harness.js';

const ROOT = resolve(import.meta.dirname, '../..');

describe('checkpoints in the window, end to end', () => {
  let ui: UiHarness;
  let t: TestDesk;
  let server: LocalServer;
  let page: Page;
  const sb = uniqueName('uck');

  beforeAll(async () => {
    ui = await openUi({ width: 1280, height: 900 }, { desk: { plugins: false } });
    ({ t, server, page } = ui);
    await t.desk.createSandbox({ name: sb, backend: 'docker' });
    await t.desk.exec({ sandbox: sb, session: 'agent', command: 'mkdir -p ~/project && cd ~/project && echo v1 > notes.txt' });
  }, 120_000);
  afterAll(async () => {
    for (const id of t?.desk.store.checkpoints.ids() ?? []) await t.desk.checkpoints.remove(id).catch(() => undefined);
    await ui?.close();
  });

  it('checkpoint from the toolbar and the panel, restore with confirmation, the project comes back', async () => {
    await page.goto(server.appUrl());
    await page.getByTestId(`sandbox-row-${sb}`).click();
    await page.getByTestId('sandbox-checkpoint').click();
    await expect.poll(() => page.getByText(/Checkpoint [0-9a-f]+ saved/).count(), { timeout: 60_000 }).toBeGreaterThan(0);

    await page.getByTestId('view-details').click();
    await page.getByLabel('Checkpoint label').fill('before the agent');
    await page.getByTestId('checkpoint-take').click();
    await expect.poll(() => page.getByTestId('checkpoint-result').textContent(), { timeout: 60_000 }).toMatch(/saved/);
    const labelled = (await t.desk.checkpoints.list(sb)).find((c) => c.label === 'before the agent')!;
    await expect.poll(() => page.getByTestId(`checkpoint-row-${labelled.id}`).isVisible(), { timeout: 15_000 }).toBe(true);

    await t.desk.exec({ sandbox: sb, session: 'agent', command: 'cd ~ && rm -rf ~/project' });
    await page.getByTestId(`checkpoint-restore-${labelled.id}`).click();
    await page.getByRole('alertdialog', { name: `Restore ${sb}` }).waitFor();
    await page.getByTestId('checkpoints-panel').screenshot({ path: join(ROOT, 'docs', 'checkpoints-panel.png') });
    await page.getByTestId('confirm-restore').click();
    await expect.poll(() => page.getByTestId('checkpoint-result').textContent(), { timeout: 90_000 }).toMatch(/Restored/);
    const r = await t.desk.exec({ sandbox: sb, session: 'agent', command: 'pwd; cat notes.txt' });
    expect(r).toMatchObject({ stdout: '/home/agent/project\nv1\n', cwdObserved: true });
  });
});
