import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'node:https';
import type { DockerOptions } from 'dockerode';

export interface DockerEndpoint {
  /** For messages: unix:///var/run/docker.sock, tcp://host:2375 … */
  url: string;
  /** Where it came from: DOCKER_HOST, the docker context NAME, or the default socket. */
  origin: string;
  options: DockerOptions;
}

/** A context's (or DOCKER_CERT_PATH's) client certificate, key and CA, and whether to skip verifying the engine. */
interface TlsMaterial {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  skipVerify: boolean;
}

/** ca.pem, cert.pem and key.pem, those that exist: the docker CLI's names, in contexts and DOCKER_CERT_PATH alike. */
function readTlsDir(dir: string, skipVerify: boolean): TlsMaterial {
  const m: TlsMaterial = { skipVerify };
  for (const k of ['ca', 'cert', 'key'] as const) {
    const f = join(dir, `${k}.pem`);
    if (existsSync(f)) m[k] = readFileSync(f);
  }
  return m;
}

const hasTls = (m: TlsMaterial | null): m is TlsMaterial => !!m && (m.skipVerify || !!m.ca || !!m.cert || !!m.key);

function fromUrl(url: string, origin: string, env: NodeJS.ProcessEnv, material: TlsMaterial | null = null): DockerEndpoint {
  if (url.startsWith('unix://')) return { url, origin, options: { socketPath: url.slice('unix://'.length) } };
  if (url.startsWith('npipe://')) return { url, origin, options: { socketPath: url.slice('npipe://'.length) } };
  if (/^(tcp|http|https):\/\//.test(url)) {
    const u = new URL(url.replace(/^tcp:/, 'http:'));
    const tls = u.protocol === 'https:' || env.DOCKER_TLS_VERIFY === '1' || hasTls(material);
    // URL keeps IPv6 hosts bracketed ([::1]); the socket layer wants them bare.
    const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
    // URL hides a port equal to its scheme's default (https:443): read the port from the text itself.
    const port = /^[a-z]+:\/\/(?:\[[^\]]*\]|[^:/]*):(\d+)/.exec(url)?.[1];
    const options: DockerOptions = { protocol: tls ? 'https' : 'http', host, port: Number(port ?? (tls ? 2376 : 2375)) };
    if (tls && material) {
      // dockerode hands these to every request; without them a TLS engine refuses the client (or we
      // refuse its self-signed certificate) while `docker exec`, which reads the same files, works.
      const { ca, cert, key } = material;
      Object.assign(options, ca ? { ca } : {}, cert ? { cert } : {}, key ? { key } : {});
      // SkipTLSVerify: still TLS (and still our client certificate), without checking the engine's.
      if (material.skipVerify)
        (options as DockerOptions & { agent?: Agent }).agent = new Agent({
          rejectUnauthorized: false,
          ...(ca ? { ca } : {}),
          ...(cert ? { cert } : {}),
          ...(key ? { key } : {}),
        });
    }
    return { url, origin, options };
  }
  if (url.startsWith('ssh://')) {
    const u = new URL(url);
    return {
      url,
      origin,
      options: { protocol: 'ssh', host: u.hostname, port: Number(u.port || 22), username: u.username || undefined } as DockerOptions,
    };
  }
  return { url, origin, options: { socketPath: url } };
}

/**
 * The engine the app talks to — the same one the `docker` CLI in every exec prefix talks to:
 * `DOCKER_HOST`, else `DOCKER_CONTEXT` or the config's current context, else the default socket.
 */
export function resolveDockerEndpoint(env: NodeJS.ProcessEnv = process.env): DockerEndpoint {
  const configDir = env.DOCKER_CONFIG ?? join(homedir(), '.docker');
  if (env.DOCKER_HOST) {
    // Like the CLI: with DOCKER_TLS_VERIFY the client files come from DOCKER_CERT_PATH (default ~/.docker).
    const material = env.DOCKER_TLS_VERIFY === '1' ? readTlsDir(env.DOCKER_CERT_PATH ?? configDir, false) : null;
    return fromUrl(env.DOCKER_HOST, 'DOCKER_HOST', env, material);
  }
  let context = env.DOCKER_CONTEXT;
  if (!context) {
    try {
      context = (JSON.parse(readFileSync(join(configDir, 'config.json'), 'utf8')) as { currentContext?: string }).currentContext;
    } catch {
      context = undefined;
    }
  }
  if (context && context !== 'default') {
    const id = createHash('sha256').update(context).digest('hex');
    const meta = join(configDir, 'contexts', 'meta', id, 'meta.json');
    if (existsSync(meta)) {
      try {
        const docker = (JSON.parse(readFileSync(meta, 'utf8')) as { Endpoints?: { docker?: { Host?: string; SkipTLSVerify?: boolean } } })
          .Endpoints?.docker;
        // The context's TLS material lives beside its metadata: contexts/tls/<id>/docker/{ca,cert,key}.pem.
        const material = readTlsDir(join(configDir, 'contexts', 'tls', id, 'docker'), docker?.SkipTLSVerify === true);
        if (docker?.Host) return fromUrl(docker.Host, `docker context ${context}`, env, material);
      } catch {
        // An unreadable context falls through to the default socket, like the CLI's own fallback.
      }
    }
  }
  return fromUrl('unix:///var/run/docker.sock', 'the default socket', env);
}
