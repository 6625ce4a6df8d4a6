import type { Command } from 'commander';
import { printJson, type Out } from './output.js';

/**
 * `sandbox-desk service run|status|stop`: the per-user service every client talks to (src/service/).
 * Clients start it on demand; `run` is for debugging (foreground) and for a systemd user unit.
 * Everything heavy is imported in the actions: building the command tree must stay fast.
 */
export function addServiceCommands(program: Command, out: Out, env: NodeJS.ProcessEnv = process.env): void {
  const service = program.command('service').description("the background service that owns sandboxes' shells, terminals and recordings");

  service
    .command('run')
    .description('run the service in the foreground (clients start it on their own; this is for debugging or a systemd unit)')
    .action(async () => {
      const { runService } = await import('../service/service-main.js');
      await runService({ env });
      // Whatever handle a backend left open must not keep a stopped service alive.
      setTimeout(() => process.exit(process.exitCode ?? 0), 2000).unref();
    });

  service
    .command('status')
    .description('whether the service runs, its version, pid and what keeps it busy')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }) => {
      const { clientServicePaths, probeService } = await import('../client/connect.js');
      const paths = clientServicePaths({ env });
      const info = await probeService(paths.socketPath);
      if (o.json)
        return printJson(out, info ? { running: true, socket: paths.socketPath, ...info } : { running: false, socket: paths.socketPath });
      if (!info) return out.stdout(`No service runs for ${paths.dataDir} (any sandbox-desk command starts it).\n`);
      const b = info.busy;
      out.stdout(
        `Service ${info.version} (pid ${info.pid}) serving ${info.dataDir} since ${info.startedAt}\n  socket: ${paths.socketPath}\n  running sandboxes: ${b.runningSandboxes}, clients: ${b.clients}, recordings: ${b.recordings}\n`,
      );
    });

  service
    .command('stop')
    .description('stop the service (never the sandboxes: they keep running and the next service re-adopts them)')
    .option('--force', 'stop it even while sandboxes are running')
    .option('--json', 'machine-readable output')
    .action(async (o: { force?: boolean; json?: boolean }) => {
      const { clientServicePaths, stopService } = await import('../client/connect.js');
      const paths = clientServicePaths({ env });
      const info = await stopService(paths.socketPath, o.force === true);
      if (o.json) return printJson(out, { stopped: info !== null, pid: info?.pid ?? null });
      if (!info) return out.stdout('No service was running.\n');
      out.stdout(`Stopped the service (pid ${info.pid}).\n`);
    });
}
