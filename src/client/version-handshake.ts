import { SandboxDeskError } from '../shared/errors.js';
import { SERVICE_PROTOCOL, type ServiceInfo } from '../shared/service-info.js';

export type Handshake = { action: 'use' } | { action: 'restart'; reason: string } | { action: 'refuse'; error: SandboxDeskError };

/**
 * What a client does with the service it found: use it when it runs this very version; restart it
 * (stop it, start ours) when it runs another and nothing depends on it; else refuse, saying what to do —
 * a running sandbox's shells, terminals and recordings live in that service.
 */
export function versionHandshake(clientVersion: string, info: ServiceInfo): Handshake {
  if (info.version === clientVersion && info.protocol === SERVICE_PROTOCOL) return { action: 'use' };
  const what = `the Sandbox Desk service (pid ${info.pid}) runs version ${info.version} (protocol ${info.protocol}); this client is ${clientVersion} (protocol ${SERVICE_PROTOCOL})`;
  const { runningSandboxes, recordings } = info.busy;
  if (runningSandboxes === 0 && recordings === 0) return { action: 'restart', reason: `${what}: restarting it, as nothing runs` };
  return {
    action: 'refuse',
    error: new SandboxDeskError('version_mismatch', `${what}, and it has ${runningSandboxes} running sandbox(es)`, {
      hint: 'stop your sandboxes or run `sandbox-desk service stop --force`',
      details: { serviceVersion: info.version, clientVersion, servicePid: info.pid },
    }),
  };
}
