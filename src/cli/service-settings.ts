import type { Out } from './output.js';

/**
 * The service reads the config when it starts (it is everybody's core: a setting changing under a
 * running command would change it halfway). So a change made here reaches it at its next start: an
 * idle service (no running sandbox, no recording, no other client) is stopped now, and the next
 * command starts one with the new settings; a busy one is left alone, and the person is told how to
 * restart it.
 */
export async function settingsChanged(env: NodeJS.ProcessEnv, out: Out): Promise<void> {
  const { clientServicePaths, probeService, stopService } = await import('../client/connect.js');
  const { socketPath } = clientServicePaths({ env });
  const info = await probeService(socketPath).catch(() => null);
  if (!info) return;
  const { runningSandboxes, recordings, clients } = info.busy;
  // The probe's own connection may be counted while it is open: one client is this one.
  if (runningSandboxes === 0 && recordings === 0 && clients <= 1) {
    await stopService(socketPath, false).catch(() => undefined);
    return;
  }
  out.stderr(
    `sandbox-desk: the running service (pid ${info.pid}) keeps its old settings until it restarts: \`sandbox-desk service stop --force\` restarts it (sandboxes keep running; session shells and terminals start again)\n`,
  );
}
