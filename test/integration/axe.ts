/**
 * axe-core (npm) in the page under test, injected through Playwright: the source is evaluated over the
 * DevTools protocol, so the app's CSP (script-src 'self') does not stand in the way and nothing is
 * added to the page's own scripts. `seriousViolations` returns what axe rates serious or critical, as
 * lines a failing assertion can show.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeResult {
  violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[]; failureSummary?: string }> }>;
}

export async function seriousViolations(page: Page, context = 'body'): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(async (ctx) => {
    const axe = (window as unknown as { axe: { run(c: string, o: object): Promise<unknown> } }).axe;
    return (await axe.run(ctx, { resultTypes: ['violations'] })) as AxeResult;
  }, context);
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) =>
      v.nodes.map((n) => `${v.impact} ${v.id} (${v.help}) at ${JSON.stringify(n.target)}: ${n.failureSummary?.replace(/\s+/g, ' ') ?? ''}`),
    );
}
