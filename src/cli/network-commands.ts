/**
 * The network policy's commands: `sandbox network NAME [--mode …] [--allow …] [--deny …]` and
 * `network log NAME [--follow] [--json]`. The create flags (`--network`, `--allow`) are in main.ts.
 */
import { filtersNetworkLog, matchesNetworkLog, type NetworkLogFilter } from '../shared/network-log-filter.js';
import type { Command } from 'commander';
import type { NetworkLogEntry, NetworkMode, NetworkPolicy } from '../api/contract.js';
import type { DeskClient } from '../client/http-client.js';
import { SandboxDeskError } from '../shared/errors.js';
import { NETWORK_MODES, normalizeAllowEntry } from '../shared/network-policy.js';
import { cancelOnInterrupt } from './interrupt.js';
import { printJson, type Out } from './output.js';

/** How many of the newest entries a follow asks for each time: more than a quarter second brings. */
const FOLLOW_WINDOW = 10_000;

/**
 * The entries of `now` (the newest, oldest first) that come after the newest one of `before`: found by
 * the last entry shown, so nothing is printed twice; when it is no longer in the window (more new
 * connections than the window holds), all of `now` is new.
 */
export function newEntries(before: NetworkLogEntry[], now: NetworkLogEntry[]): NetworkLogEntry[] {
  if (before.length === 0) return now;
  const key = (e: NetworkLogEntry): string => JSON.stringify(e);
  const lastKey = key(before[before.length - 1]!);
  for (let i = now.length - 1; i >= 0; i--) if (key(now[i]!) === lastKey) return now.slice(i + 1);
  return now;
}

export const collect = (v: string, acc: string[]): string[] => [...acc, v];

/** `--network` as given, refused with the valid ones when it is not one. */
export function parseNetworkMode(v: string | undefined): NetworkMode | undefined {
  if (v === undefined) return undefined;
  if (!(NETWORK_MODES as readonly string[]).includes(v))
    throw new SandboxDeskError('invalid_input', `--network ${JSON.stringify(v)} is not a network mode`, {
      hint: 'give open (the default), offline (no network at all) or allow (only the --allow entries)',
    });
  return v as NetworkMode;
}

/** Checks `--allow`/`--deny` entries before the core is opened: a bad one is refused with what a valid one looks like. */
export function checkEntries(entries: readonly string[]): string[] {
  return entries.map(normalizeAllowEntry);
}

export function policyLine(p: NetworkPolicy): string {
  if (p.mode !== 'allow') return p.mode;
  return `allow ${p.allow.length ? p.allow.join(', ') : '(nothing yet)'}`;
}

export function logLine(e: NetworkLogEntry): string {
  const verdict = e.verdict === 'allowed' ? 'ALLOW' : 'DENY ';
  return `${e.at}  ${verdict}  ${e.host}:${e.port}  ${e.kind}${e.reason ? `  (${e.reason})` : ''}${e.process ? `  [${e.process}]` : ''}\n`;
}

export function addNetworkCommands(program: Command, sandbox: Command, client: () => Promise<DeskClient>, out: Out): void {
  sandbox
    .command('network <name>')
    .description('show or change a sandbox’s network policy (live while it runs: takes effect on the next connection)')
    .option('--mode <mode>', 'open | offline | allow')
    .option(
      '--allow <entry>',
      'allow HOST[:PORT], *.DOMAIN or a CIDR (repeatable; switches an open sandbox to allow)',
      collect,
      [] as string[],
    )
    .option('--deny <entry>', 'take an entry off the allow list (repeatable)', collect, [] as string[])
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: { mode?: string; allow: string[]; deny: string[]; json?: boolean }) => {
      const mode = parseNetworkMode(o.mode);
      const change = { mode, allow: checkEntries(o.allow), deny: checkEntries(o.deny) };
      const policy = await (await client()).call('sandboxNetwork', { name, ...change });
      if (o.json) printJson(out, policy);
      else out.stdout(`${name}: network ${policyLine(policy)}\n`);
    });

  const network = program.command('network').description('the connection log of a sandbox’s network policy');
  network
    .command('log <name>')
    .description('connections the egress proxy allowed or denied, oldest first')
    .option('--follow', 'keep printing new connections until Ctrl-C')
    .option('--limit <n>', 'how many of the newest to show first (default 100)')
    .option('--json', 'one JSON object per line (with --follow) or a JSON array')
    .option('--denied', 'only the connections the proxy refused')
    .option('--process <name>', 'only lines whose process name contains this (e.g. curl)')
    .option('--host <part>', 'only lines whose host contains this (e.g. github.com)')
    .action(async (name: string, o: { follow?: boolean; limit?: string; json?: boolean } & NetworkLogFilter) => {
      const limit = o.limit !== undefined ? Number(o.limit) : 100;
      if (!Number.isInteger(limit) || limit < 1)
        throw new SandboxDeskError('invalid_input', `--limit ${JSON.stringify(o.limit)} is not a positive whole number`, {
          hint: 'e.g. --limit 50',
        });
      const c = await client();
      const filter: NetworkLogFilter = { denied: o.denied, process: o.process, host: o.host };
      // The newest `limit` lines that match (not the matches among the newest `limit`).
      const first = filtersNetworkLog(filter)
        ? (await c.call('networkLog', { sandbox: name, limit: 10_000 })).filter((e) => matchesNetworkLog(e, filter)).slice(-limit)
        : await c.call('networkLog', { sandbox: name, limit });
      if (!o.follow) {
        if (o.json) printJson(out, first);
        else
          out.stdout(
            first.length
              ? first.map(logLine).join('')
              : filtersNetworkLog(filter)
                ? `No connections of ${name} match --denied/--process/--host.\n`
                : `No connections logged for ${name} yet.\n`,
          );
        return;
      }
      const show = (e: NetworkLogEntry): void => {
        if (matchesNetworkLog(e, filter)) out.stdout(o.json ? `${JSON.stringify(e)}\n` : logLine(e));
      };
      first.forEach(show);
      // Every entry logged after the newest one shown is printed once (newEntries).
      let last = first;
      await cancelOnInterrupt(
        { stdout: () => undefined, stderr: () => undefined },
        (signal) =>
          new Promise<void>((resolve) => {
            let busy = false;
            const timer = setInterval(() => {
              if (busy) return;
              busy = true;
              c.call('networkLog', { sandbox: name, limit: FOLLOW_WINDOW })
                .then((now) => {
                  newEntries(last, now).forEach(show);
                  last = now;
                })
                .catch(() => undefined)
                .finally(() => (busy = false));
            }, 250);
            signal.addEventListener('abort', () => {
              clearInterval(timer);
              resolve();
            });
          }),
      );
    });
}
