import { addNetworkCommands, checkEntries, collect, parseNetworkMode } from './network-commands.js';
import { Command, CommanderError, Option } from 'commander';
import type { SandboxInfo } from '../api/contract.js';
import { createRequire } from 'node:module';
import type { DeskClient } from '../client/http-client.js';
import { openClient, type OpenClientOptions } from './cli-client.js';
import { settingsChanged } from './service-settings.js';
import { withOperationProgress, type ProgressLine } from './operation-progress.js';
import { cancelOperationOnAbort } from './cancel-operation.js';
import type { SandboxDesk, SandboxDeskOptions } from '../api/sandbox-desk.js';
import { parseIsolation } from '../sandbox/plugins/plugin-settings.js';
import { addPluginCommands } from './plugin-command.js';
import { addConfigCommands, ConfigFile } from './config-command.js';
import { openCliLog, packageVersion, type CliLog } from './cli-log.js';
import { resolvePaths } from '../platform/paths.js';
import { DEFAULT_CONFIG } from '../platform/config.js';
import { SandboxDeskError } from '../shared/errors.js';
import {
  EXIT_OWN_ERROR,
  printError,
  printJson,
  printWarnings,
  processOut,
  sandboxDetails,
  sandboxTable,
  sessionTable,
  type Out,
} from './output.js';
import { addCpCommand } from './cp-command.js';
import { addDesktopCommands } from './desktop-commands.js';
import { addCheckpointCommands } from './checkpoint-commands.js';
import { addReplayCommands } from './replay-commands.js';
import { addImageCommands } from './image-command.js';
import { addPoolCommands } from './pool-commands.js';
import { addMcpCommands } from './mcp-command.js';
import { addLogsCommands } from './logs-command.js';
import { addServeCommand } from './serve-command.js';
import { addServiceCommands } from './service-command.js';
import { addTokenCommands } from './token-command.js';
import { cancelOnInterrupt } from './interrupt.js';
import { parseKeyValues, parseMounts, wantsJsonOutput } from './parse-args.js';
import { addCompletionCommands } from './completion.js';
import { addStandardAliases } from './command-aliases.js';
import { addHelpExamples } from './help-examples.js';
import { displayKey } from './display-key.js';
import { usageError } from './usage-errors.js';
import { runExec, type ExecFlags } from './exec-command.js';
import { poolsWereConfigured, warmOutcomePhrase } from '../shared/warm-outcome.js';

interface JsonFlag {
  json?: boolean;
}

interface VmFlags {
  cpus?: string;
  memory?: string;
  disk?: string;
  accel?: string;
}

/** The qemu flags are shorthands for `--option cpus=…` etc.; the backend validates them. */
function vmFlagOptions(o: VmFlags): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const k of ['cpus', 'memory', 'disk', 'accel'] as const) if (o[k] !== undefined) picked[k] = o[k];
  return picked;
}

/** Long work (a VM boot) reports each step on stderr as it happens, so stdout stays the result. */
function progressPrinter(out: Out, json: boolean | undefined): (e: ProgressLine) => void {
  const t0 = Date.now();
  return (e) => {
    const at = `${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s`;
    out.stderr(
      json ? JSON.stringify({ progress: e }) + '\n' : `${at}  ${e.level === 'warning' ? 'warning: ' : ''}${e.step}: ${e.message}\n`,
    );
  };
}

/** `inspect --json` shows a backend's own facts (a VM's accel, sshPort, pid, serialLog) at the top level too. */
function withBackendDetails(info: SandboxInfo): SandboxInfo & Record<string, unknown> {
  return { ...(info.details ?? {}), ...info };
}

/**
 * A VM's create: `fromTemplate` (restored from a VM template) and, when not, `templateNote` (why it
 * booted cold); nothing for backends without templates.
 */
/** ", warm from the pool of IMAGE" / ", cold (why)" for the create line: the same words as the window's notice. */
export function howCreated(r: { warm?: boolean; warmPool?: string; warmReason?: string }): string {
  const phrase = warmOutcomePhrase(r, poolsWereConfigured(r));
  return phrase ? `, ${phrase}` : '';
}

function templateOutcome(info: SandboxInfo): {
  fromTemplate?: boolean;
  templateNote?: string | null;
  desktopFromTemplate?: boolean;
  desktopNote?: string;
} {
  const d = info.details;
  if (!d || typeof d.fromTemplate !== 'boolean') return {};
  if (!d.fromTemplate) return { fromTemplate: false, templateNote: (d.templateNote as string | null) ?? null };
  // A desktop template: its desktop came running with the memory (or why it was not handed over).
  if (typeof d.desktopFromTemplate !== 'boolean') return { fromTemplate: true };
  return d.desktopFromTemplate
    ? { fromTemplate: true, desktopFromTemplate: true }
    : { fromTemplate: true, desktopFromTemplate: false, desktopNote: String(d.desktopNote) };
}

/**
 * The core, loaded on first use rather than imported at the top: it pulls in the whole module graph
 * (Docker client, SQLite, node-pty, the MCP SDK…), which `__complete` (a Tab press), `--version` and
 * `--help` never touch — they build the command tree and stop. `require` of an ES module is synchronous
 * (Node ≥ 20.19), so every `core()` stays a plain call, and it is the same module instance an `import`
 * would give.
 */
function loadSandboxDesk(): typeof SandboxDesk {
  const load = createRequire(import.meta.url) as (id: string) => { SandboxDesk: typeof SandboxDesk };
  return load('../api/sandbox-desk.js').SandboxDesk;
}

/**
 * Runs the `sandbox-desk` command and returns its exit code: the command's own for `exec`, 125 for
 * Sandbox Desk's errors, 0 otherwise. `out` and `open` are injectable for tests.
 */
export async function main(
  argv: string[],
  out: Out = processOut,
  open: (o: SandboxDeskOptions) => SandboxDesk = (o) => new (loadSandboxDesk())(o),
  env: NodeJS.ProcessEnv = process.env,
  /** How a command gets its client (default: cli-client.ts's openClient); tests give one of their own. */
  connect: (o: OpenClientOptions) => Promise<DeskClient> = openClient,
): Promise<number> {
  let desk: SandboxDesk | null = null;
  let opened: Promise<DeskClient> | null = null;
  const paths = resolvePaths(env);
  // The log opens once the global options are parsed (preAction), before any action runs.
  let log: CliLog | null = null;
  // Said before the log is open (the log's own settings come from the config): kept until it is.
  const notices: string[] = [];
  const configFile = new ConfigFile(paths, (m) => (log ? log.logger.warn(m) : notices.push(m)));
  // The global --plugin/--plugin-isolation options are parsed by the time any action asks for the core.
  const core = (): SandboxDesk =>
    (desk ??= open({
      ...coreOptions(program.opts()),
      ...(log?.config ? { config: log.config } : {}),
      ...(log ? { logger: log.logger } : {}),
    }));
  // Every command but mcp/serve reaches Sandbox Desk through this one client (cli-client.ts).
  const client = (): Promise<DeskClient> => {
    const o = program.opts<{ plugin: string[]; pluginIsolation?: string }>();
    return (opened ??= connect({ core, env, ownCore: o.plugin.length > 0 || o.pluginIsolation !== undefined }));
  };
  let exitCode = 0;
  const wantsJson = wantsJsonOutput(argv);
  const t0 = Date.now();

  const program = new Command('sandbox-desk')
    .description('Manage local sandboxes and run commands in them with truthful working directories.')
    // The error first, then what to do, on one line (usage-errors.ts); commander's own suggestion is off
    // so that every "did you mean" comes from the one helper.
    .showSuggestionAfterError(false)
    .exitOverride()
    .configureOutput({ writeOut: (s) => out.stdout(s), writeErr: (s) => out.stderr(s), outputError: () => undefined })
    .option(
      '--plugin <path>',
      'load a plugin from this folder or .js module, besides <data dir>/plugins/ (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option(
      '--plugin-isolation <mode>',
      'in-process | host: run plugins inside the app or each in its own child process (config: plugins.isolation)',
    )
    .option(
      '--log-level <level>',
      `least severe level written to the log (${paths.logFile}): trace|debug|info|warn|error|fatal|silent (config: log.level)`,
    )
    .option('--debug', 'same as --log-level debug')
    .version(packageVersion(), '--version', 'print the version');
  program.hook('preAction', (_program, action) => {
    // A Tab press writes no log: `__complete` reads names from the store and prints, as fast as it can.
    if (action.name() === '__complete') return;
    log ??= openCliLog(paths, configFile, program.opts());
    for (const m of notices.splice(0)) log.logger.warn(m);
    log.logger.debug({ argv, command: action.name() }, 'command');
  });

  const sandbox = program.command('sandbox').description('create, list, inspect, start, stop and remove sandboxes');

  sandbox
    .command('create <name>')
    .description('create a sandbox (and start it, unless --no-start)')
    .option('--backend <backend>', 'local | docker | qemu (or a plugin backend)', 'docker')
    .option(
      '--image <image>',
      'docker: an image (default sandbox-desk/base:latest); qemu: an image name or a .qcow2/raw disk path (default debian-test)',
    )
    .option('--default-cwd <path>', "where commands start: an absolute in-sandbox path, or ~ for the sandbox user's home")
    .option('--user <user>', "the user commands run as (default: the image's non-root user)")
    .option('--no-start', 'create without starting')
    .option(
      '--mount <host:sandbox[:ro]>',
      'bind a host directory into the sandbox (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option(
      '--env <KEY=VALUE>',
      'environment variable for the sandbox (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('--option <k=v>', 'backend-specific option (repeatable)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--cpus <n>', 'qemu: virtual CPUs (default 2); docker: a CPU limit, fractions allowed (default none)')
    .option(
      '--memory <MiB>',
      "qemu: memory in MiB (default 1024, or the image's advice: debian-desktop 2048); docker: a memory limit in MiB (default none)",
    )
    .option(
      '--desktop',
      "add the bot desktop's parts: docker builds (once, cached) a desktop variant of a Debian/Ubuntu-based --image; qemu installs them from the guest's mirror at first boot (or use --image debian-desktop)",
    )
    .option('--disk <GiB>', "qemu: disk size in GiB (default: the image's)")
    .option('--accel <auto|kvm|tcg>', 'qemu: acceleration; auto uses KVM only when a guest really runs under it (default auto)')
    .option('--network <mode>', 'network policy: open (default), offline (no network), allow (only --allow entries, via the egress proxy)')
    .option('--allow <entry>', 'with --network allow: HOST[:PORT], *.DOMAIN or a CIDR (repeatable)', collect, [] as string[])
    .option('--json', 'machine-readable output')
    .action(
      async (
        name: string,
        o: JsonFlag &
          VmFlags & {
            network?: string;
            allow: string[];
            backend: string;
            image?: string;
            defaultCwd?: string;
            user?: string;
            start: boolean;
            mount: string[];
            env: string[];
            option: string[];
            desktop?: boolean;
          },
      ) => {
        // Checked before the core opens: a bad --network or --allow is refused at once (exit 125).
        const network = parseNetworkMode(o.network);
        const allow = checkEntries(o.allow);
        const c = await client();
        const r = await cancelOnInterrupt(out, (signal) =>
          withOperationProgress(c, name, progressPrinter(out, o.json), () =>
            cancelOperationOnAbort(c, name, signal, () =>
              c.call('createSandbox', {
                name,
                backend: o.backend,
                image: o.image,
                defaultCwd: o.defaultCwd,
                user: o.user,
                start: o.start,
                mounts: parseMounts(o.mount),
                env: parseKeyValues(o.env, '--env'),
                options: { ...parseKeyValues(o.option, '--option'), ...vmFlagOptions(o), ...(o.desktop ? { desktop: 'true' } : {}) },
                network,
                allow,
              }),
            ),
          ),
        );
        if (o.json) return printJson(out, { ...r, ...templateOutcome(r.sandbox), sandbox: withBackendDetails(r.sandbox) });
        printWarnings(out, r.warnings);
        const outcome = templateOutcome(r.sandbox);
        if (outcome.fromTemplate) out.stderr(`Restored from VM template ${String(r.sandbox.details?.template)}.\n`);
        if (outcome.desktopFromTemplate) out.stderr('Its desktop is running (it was running in the template).\n');
        else if (outcome.desktopNote) out.stderr(`Warning: ${outcome.desktopNote}\n`);
        out.stdout(
          `Created sandbox ${r.sandbox.name} (${r.sandbox.backend}, ${r.sandbox.state}${howCreated(r)}).\n` + sandboxDetails(r.sandbox),
        );
      },
    );

  sandbox
    .command('list')
    .description('list sandboxes with their live state')
    .option('--json', 'machine-readable output')
    .action(async (o: JsonFlag) => {
      const list = await (await client()).call('listSandboxes', {});
      if (o.json) printJson(out, list);
      else out.stdout(sandboxTable(list));
    });

  sandbox
    .command('inspect <name>')
    .description('show a sandbox: state, declared default cwd, resolved home, temp dir')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag) => {
      const info = await (await client()).call('inspectSandbox', { name });
      if (o.json) printJson(out, withBackendDetails(info));
      else out.stdout(sandboxDetails(info));
    });

  for (const verb of ['start', 'stop'] as const) {
    sandbox
      .command(`${verb} <name>`)
      .description(`${verb} a sandbox`)
      .option('--json', 'machine-readable output')
      .action(async (name: string, o: JsonFlag) => {
        const onProgress = progressPrinter(out, o.json);
        const c = await client();
        // A start can be cancelled (Ctrl-C stops the boot); a stop has already asked the guest to power off.
        const info =
          verb === 'start'
            ? await cancelOnInterrupt(out, (signal) =>
                withOperationProgress(c, name, onProgress, () =>
                  cancelOperationOnAbort(c, name, signal, () => c.call('startSandbox', { name })),
                ),
              )
            : await withOperationProgress(c, name, onProgress, () => c.call('stopSandbox', { name }));
        if (o.json) printJson(out, withBackendDetails(info));
        else out.stdout(`${info.name}: ${info.state}\n`);
      });
  }

  sandbox
    .command('rm <name>')
    .description('remove a sandbox (refused while it runs, unless --force)')
    .option('--force', 'remove even while it runs')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { force?: boolean }) => {
      await (await client()).call('removeSandbox', { name, force: Boolean(o.force) });
      if (o.json) printJson(out, { removed: name });
      else out.stdout(`Removed ${name}.\n`);
    });

  program
    .command('exec <name> [command...]')
    .description('run a command in a sandbox: sandbox-desk exec NAME [options] -- COMMAND')
    .option('--session <key>', 'the session whose cwd the command uses and updates (default: "default")')
    .option('--parent <key>', 'create the session as a child of this one, starting in its cwd')
    .option('--workdir <dir>', 'run this command in DIR (a relative DIR is resolved against the session cwd)')
    .option('--step <id>', 'the request belongs to a workflow step: refuse to run without a resolvable cwd')
    .option('--timeout <seconds>', 'kill the command after this many seconds')
    .option('--no-shell', "run one-shot instead of in the session's persistent shell")
    .addOption(new Option('--user <user>', 'run as this user').hideHelp())
    .option('--json', 'print one JSON object with the result')
    .action(async (name: string, words: string[], o: ExecFlags) => {
      exitCode = await runExec(client, out, name, words, o);
    });

  addCheckpointCommands(program, sandbox, client, out, progressPrinter);
  addDesktopCommands(
    program,
    client,
    out,
    () => (log?.config ?? DEFAULT_CONFIG).clipboard.maxBytes,
    (code) => (exitCode = code),
  );
  addCpCommand(program, client, out);
  addImageCommands(program, client, out, (code) => (exitCode = code));
  addPoolCommands(program, client, out);
  const agentPolicy = () => ({ allowOtherUsers: core().config.agents.allowOtherUsers });
  addServeCommand(program, core, out, agentPolicy);
  addMcpCommands(program, client, out);
  addTokenCommands(program, client, out);
  const settings = () => settingsChanged(env, out);
  addPluginCommands(program, client, out, () => configFile, settings);
  addConfigCommands(program, () => configFile, out, settings);
  addCompletionCommands(program, out, () => paths.dataDir);
  addLogsCommands(program, client, out);

  const session = program.command('session').description('list, create and remove sessions and their cwd records');
  session
    .command('list <name>')
    .description('sessions of a sandbox: key, parent, cwd record, when it was observed, its source')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag) => {
      const list = await (await client()).call('listSessions', { sandbox: name });
      if (o.json) printJson(out, list);
      else out.stdout(sessionTable(list));
    });
  session
    .command('create <name> <key>')
    .description('create a session, optionally as a child of another, with the cwd it starts in')
    .option('--parent <key>', 'the parent session: the child starts in its current cwd')
    .option('--cwd <dir>', 'the absolute cwd the session starts in')
    .option('--json', 'machine-readable output')
    .action(async (name: string, key: string, o: JsonFlag & { parent?: string; cwd?: string }) => {
      const s = await (await client()).call('createSession', { sandbox: name, key, parent: o.parent, cwd: o.cwd });
      if (o.json) printJson(out, s);
      else out.stdout(`Created session ${displayKey(s.key)} in ${name} (cwd ${s.cwd ?? 'not set: the sandbox default'}).\n`);
    });
  session
    .command('rm <name> <key>')
    .description('remove a session and its cwd record')
    .option('--json', 'machine-readable output')
    .action(async (name: string, key: string, o: JsonFlag) => {
      await (await client()).call('removeSession', { sandbox: name, key });
      if (o.json) printJson(out, { removed: key });
      else out.stdout(`Removed session ${displayKey(key)}.\n`);
    });

  addNetworkCommands(program, sandbox, client, out);
  addReplayCommands(program, client, out);
  addServiceCommands(program, out, env);
  addStandardAliases(program);
  addHelpExamples(program);

  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return printError(out, usageError(program, argv, err), wantsJson);
    }
    (log as CliLog | null)?.logger.warn(
      { err: err instanceof SandboxDeskError ? err.toJSON() : { message: String(err) } },
      'command failed',
    );
    return printError(out, err, wantsJson);
  } finally {
    if (opened) await (await (opened as Promise<DeskClient>).catch(() => null))?.close();
    if (desk) await (desk as SandboxDesk).close();
    (log as CliLog | null)?.logger.debug({ exitCode, ms: Date.now() - t0 }, 'command done');
    (log as CliLog | null)?.dispose();
  }
}

/** The global plugin options, as SandboxDesk options layered over config.json. */
function coreOptions(o: { plugin?: string[]; pluginIsolation?: string }): SandboxDeskOptions {
  const plugins: NonNullable<Exclude<SandboxDeskOptions['plugins'], false>> = {};
  if (o.plugin?.length) plugins.paths = o.plugin;
  if (o.pluginIsolation !== undefined) plugins.isolation = parseIsolation(o.pluginIsolation, '--plugin-isolation');
  return { plugins };
}

export { EXIT_OWN_ERROR };
