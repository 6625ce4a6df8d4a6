import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../platform/project-root.js';

/*
 * The desktop image's managed Chromium policy (issue 36). Chromium ignores a policy file it cannot parse
 * without a word on screen, and a policy name it does not know the same way: the file must stay strict
 * JSON (no comments, no trailing commas), hold values of the types Chromium expects, and be copied
 * where Chromium reads it (a derived --desktop image gets the same file: desktop-image.ts's
 * chromiumPolicyRun). test/integration/network-desktop.test.ts proves the effect on the network log.
 */
const dir = join(projectRoot(), 'resources/images/desktop');

describe("the desktop image's Chromium policy", () => {
  it('is strict JSON with the values that keep the browser quiet', () => {
    const policy = JSON.parse(readFileSync(join(dir, 'chromium-policy.json'), 'utf8')) as Record<string, unknown>;
    expect(policy).toMatchObject({
      BrowserSignin: 0,
      SyncDisabled: true,
      MetricsReportingEnabled: false,
      SearchSuggestEnabled: false,
      NetworkPredictionOptions: 2,
      SafeBrowsingProtectionLevel: 0,
      ComponentUpdatesEnabled: false,
      SpellCheckServiceEnabled: false,
      TranslateEnabled: false,
    });
    // Every value is a boolean or an integer: the types of the policies used here.
    for (const [name, value] of Object.entries(policy))
      expect([name, typeof value === 'boolean' || Number.isInteger(value)]).toEqual([name, true]);
  });

  it('is copied into /etc/chromium/policies/managed, the directory Debian’s Chromium reads', () => {
    const dockerfile = readFileSync(join(dir, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^COPY chromium-policy\.json \/etc\/chromium\/policies\/managed\/[a-z-]+\.json$/m);
  });
});
