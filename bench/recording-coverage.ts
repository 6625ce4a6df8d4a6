/**
 * Always recording (issue 34's benchmark): an agent drives a desktop only through the CLI for 60 s with
 * no window open — a loop of `desktop click`, `desktop type` and `exec` — and the replay's screen must
 * cover ≥ 99 % of that minute. Covered: a stretch between two consecutive records of one segment at
 * most two recorder ticks apart (the recorder writes a tick every 2 s on an idle screen, so a longer
 * silence is a stretch the recording does not vouch for); a stretch between segments, or before the
 * first record, is not covered.
 */
import { join } from 'node:path';
import type { ReplayRecording } from '../src/shared/replay-types.js';
import { screenRecordTimes } from '../src/desktop/replay/screen-replay.js';
import { metric, uniqueName, withCliHome, type Metric } from './harness.js';

export const name = 'recording-coverage';

const DRIVE_MS = 60_000;
const GOAL = 0.99;
/** Two recorder ticks (screen-recorder.ts: tickMs 2000). */
const MAX_STEP_MS = 4000;

/** How much of [from, to] the records vouch for (ms). */
export function coveredMs(segments: readonly (readonly number[])[], from: number, to: number): number {
  let covered = 0;
  for (const times of segments) {
    for (let i = 0; i + 1 < times.length; i++) {
      const a = times[i]!;
      const b = times[i + 1]!;
      if (b - a > MAX_STEP_MS) continue;
      covered += Math.max(0, Math.min(b, to) - Math.max(a, from));
    }
  }
  return covered;
}

export default async function run(): Promise<Metric[]> {
  return withCliHome(async (h) => {
    const sb = uniqueName('reccov');
    h.made.push(sb);
    h.cli('sandbox', 'create', sb, '--backend', 'docker', '--image', 'sandbox-desk/desktop:latest');
    h.cli('desktop', 'start', sb, '--geometry', '1024x768');
    const counts = { click: 0, type: 0, exec: 0 };
    const from = Date.now();
    for (let i = 0; Date.now() - from < DRIVE_MS; i++) {
      // Chromium's address bar and the page under it, in turn; text typed; a command run.
      h.cli('desktop', 'click', sb, String(200 + (i % 5) * 40), String(i % 2 ? 112 : 400));
      counts.click++;
      h.cli('desktop', 'type', sb, `step ${i} `);
      counts.type++;
      h.cli('exec', sb, '--session', 'agent', '--', `echo step ${i} >> /tmp/steps.txt`);
      counts.exec++;
    }
    const to = Date.now();
    // The recorder writes asynchronously: wait (≤ 30 s) until the recording reaches the end of the minute.
    const waitEnd = Date.now() + 30_000;
    for (;;) {
      const { recordings } = JSON.parse(h.cli('replay', 'list', sb, '--json').stdout) as { recordings: ReplayRecording[] };
      const screen = recordings.find((r) => r.sandbox === sb)?.screen;
      if (screen && Date.parse(screen.endedAt) >= to) break;
      if (Date.now() > waitEnd) break; // measured as it is: the missing end counts as not covered
      await new Promise((r) => setTimeout(r, 500));
    }
    const segments = screenRecordTimes(join(h.home, 'recordings', sb, 'screen'));
    const covered = coveredMs(segments, from, to);
    const share = covered / (to - from);
    const events = JSON.parse(h.cli('replay', 'events', sb, '--json').stdout) as { events: Array<{ kind: string }> };
    const actions = events.events.filter((e) => e.kind === 'action').length;
    const commands = events.events.filter((e) => e.kind === 'command').length;
    console.log(
      `${name}: drove ${((to - from) / 1000).toFixed(1)} s (${counts.click} clicks, ${counts.type} types, ${counts.exec} execs); ` +
        `screen covered ${(covered / 1000).toFixed(1)} s = ${(share * 100).toFixed(2)} % over ${segments.length} segment(s) — goal ≥ ${GOAL * 100} % ${share >= GOAL ? 'MET' : 'NOT MET'}; ` +
        `replay events: ${actions} actions, ${commands} commands`,
    );
    return [
      {
        ...metric('screen-covered', '%', share * 100),
        note: `of ${((to - from) / 1000).toFixed(1)} s driven through the CLI only; goal ≥ ${GOAL * 100} %`,
      },
      metric('segments', 'count', segments.length),
      { ...metric('action-events', 'count', actions), note: `${counts.click + counts.type} desktop actions sent` },
      { ...metric('command-events', 'count', commands), note: `${counts.exec} execs sent (+ none else)` },
    ];
  });
}
