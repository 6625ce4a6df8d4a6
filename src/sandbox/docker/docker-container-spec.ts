import type Docker from 'dockerode';
import type { ProvisionSpec } from '../provider.js';
import { limitsHostConfig, parseDockerOptions } from './docker-options.js';
import { inboxBind } from './docker-inbox.js';

/**
 * The one description of a sandbox's container — name, user, mounts, labels, limits and hardening.
 * Provision, restore (a container recreated from a checkpoint image) and fork all create through it,
 * so a restored or forked container can never differ from a provisioned one in how it is locked down.
 * `inboxDir`: the host folder bound read-only as the sandbox's inbox (docker-inbox.ts); none, no inbox.
 */
export function containerCreateOptions(spec: ProvisionSpec, image: string, inboxDir?: string): Docker.ContainerCreateOptions {
  const opts = parseDockerOptions(spec.options);
  return {
    name: spec.resourceName,
    Image: image,
    Hostname: spec.name.slice(0, 63),
    // Keep the container alive whatever the image's own command is; work arrives via exec.
    Entrypoint: ['sleep'],
    Cmd: ['infinity'],
    // The idle keep-alive runs as root so that `exec -u root` keeps root's capabilities (an image
    // USER would strip them); every command runs as `user` through `exec -u`, never as this.
    User: 'root',
    Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
    Labels: spec.labels,
    HostConfig: {
      Init: true,
      Privileged: false,
      PublishAllPorts: false,
      CapDrop: ['NET_RAW', 'MKNOD', 'AUDIT_WRITE'],
      SecurityOpt: ['no-new-privileges'],
      PidsLimit: 4096,
      ...limitsHostConfig(opts),
      ShmSize: 1024 * 1024 * 1024,
      ...(inboxDir ? { Binds: [inboxBind(inboxDir)] } : {}),
      Mounts: spec.mounts.map((m) => ({
        Type: 'bind' as const,
        Source: m.hostPath,
        Target: m.sandboxPath,
        ReadOnly: Boolean(m.readOnly),
      })),
    },
  };
}
