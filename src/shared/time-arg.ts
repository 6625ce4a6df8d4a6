import { SandboxDeskError } from './errors.js';

const AGO: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A time as a person or an agent gives it — on the command line (`--since 10m`) or to an MCP tool
 * (`since: "10m"`): ISO 8601 (`2026-01-02T03:04:05Z`), or a duration ago (`90s`, `10m`, `2h`, `1d`).
 * Returns ISO. One parser for both, so what the CLI takes the agent bridge takes too. `what` names
 * the argument in the error (`--since`, `since`).
 */
export function parseTimeArg(value: string, what: string, now = Date.now()): string {
  const ago = /^(\d+(?:\.\d+)?)([smhd])$/.exec(value.trim());
  if (ago) return new Date(now - Number(ago[1]) * AGO[ago[2]!]!).toISOString();
  const ms = Date.parse(value);
  if (Number.isNaN(ms))
    throw new SandboxDeskError('invalid_input', `${what} ${JSON.stringify(value)} is not a time`, {
      hint: 'give an ISO 8601 time (2026-01-02T03:04:05Z) or a duration ago (90s, 10m, 2h, 1d)',
    });
  return new Date(ms).toISOString();
}

/** What parseTimeArg takes, for help texts and tool descriptions. */
export const TIME_ARG_FORMS = 'an ISO 8601 time (2026-01-02T03:04:05Z) or a duration ago (90s, 10m, 2h, 1d)';

const DURATION_UNIT: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A length of time as a person or an agent gives it (`--timeout 2m`, `timeout: "90s"`): a number with
 * a unit (`500ms`, `90s`, `2m`, `1h`), or a bare number of seconds (as `exec --timeout` takes it).
 * Returns milliseconds, refused outside 0..`maxMs` with what was wrong and the forms it takes.
 */
export function parseDurationArg(value: string, what: string, maxMs: number): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  const ms = m ? Math.round(Number(m[1]) * DURATION_UNIT[m[2] ?? 's']!) : NaN;
  if (!Number.isFinite(ms))
    throw new SandboxDeskError('invalid_input', `${what} ${JSON.stringify(value)} is not a duration`, {
      hint: `give ${DURATION_ARG_FORMS}`,
    });
  if (ms > maxMs)
    throw new SandboxDeskError('invalid_input', `${what} ${JSON.stringify(value)} is longer than the most allowed, ${describeMs(maxMs)}`, {
      hint: `give at most ${describeMs(maxMs)}, and call again to wait longer`,
    });
  return ms;
}

/** What parseDurationArg takes, for help texts and tool descriptions. */
export const DURATION_ARG_FORMS = 'a number with a unit (500ms, 90s, 2m, 1h) or a number of seconds';

function describeMs(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
