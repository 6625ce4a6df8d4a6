import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { DockerOptions } from 'dockerode';

export interface DockerEndpoint {
  /** For messages: unix:///var/run/docker.sock, tcp://host:2375 … */
  url: string;
  /** Where it came from: DOCKER_HOST, the docker context NAME, or the default socket. */
  origin: string;
  options: DockerOptions;
}

function fromUrl(url: string, origin: string, env: NodeJS.ProcessEnv): DockerEndpoint {
  if (url.startsWith('unix://')) return { url, origin, options: { socketPath: url.slice('unix://'.length) } };
  if (url.startsWith('npipe://')) return { url, origin, options: { socketPath: url.slice('npipe://'.length) } };
  if (/^(tcp|http|https):\/\//.test(url)) {
    const u = new URL(url.replace(/^tcp:/, 'http:'));
    const tls = u.protocol === 'https:' || env.DOCKER_TLS_VERIFY === '1';
    // URL keeps IPv6 hosts bracketed ([::1]); the socket layer wants them bare.
    const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
    // URL hides a port equal to its scheme's default (https:443): read the port from the text itself.
    const port = /^[a-z]+:\/\/(?:\[[^\]]*\]|[^:/]*):(\d+)/.exec(url)?.[1];
    return { url, origin, options: { protocol: tls ? 'https' : 'http', host, port: Number(port ?? (tls ? 2376 : 2375)) } };
  }
  if (url.startsWith('ssh://')) {
    const u = new URL(url);
    return { url, origin, options: { protocol: 'ssh', host: u.hostname, port: Number(u.port || 22), username: u.username || undefined } };
  }
  return { url, origin, options: { socketPath: url } };
}

/**
 * The engine the app talks to — the same one the `docker` CLI in every exec prefix talks to:
 * `DOCKER_HOST`, else `DOCKER_CONTEXT` or the config's current context, else the default socket.
 */
export function resolveDockerEndpoint(env: NodeJS.ProcessEnv = process.env): DockerEndpoint {
  if (env.DOCKER_HOST) return fromUrl(env.DOCKER_HOST, 'DOCKER_HOST', env);
  const configDir = env.DOCKER_CONFIG ?? join(homedir(), '.docker');
  let context = env.DOCKER_CONTEXT;
  if (!context) {
    try {
      context = (JSON.parse(readFileSync(join(configDir, 'config.json'), 'utf8')) as { currentContext?: string }).currentContext;
    } catch {
      context = undefined;
    }
  }
  if (context && context !== 'default') {
    const meta = join(configDir, 'contexts', 'meta', createHash('sha256').update(context).digest('hex'), 'meta.json');
    if (existsSync(meta)) {
      try {
        const host = (JSON.parse(readFileSync(meta, 'utf8')) as { Endpoints?: { docker?: { Host?: string } } }).Endpoints?.docker?.Host;
        if (host) return fromUrl(host, `docker context ${context}`, env);
      } catch {
        // An unreadable context falls through to the default socket, like the CLI's own fallback.
      }
    }
  }
  return fromUrl('unix:///var/run/docker.sock', 'the default socket', env);
}
