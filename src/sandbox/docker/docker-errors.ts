import { SandboxDeskError } from '../../shared/errors.js';
import type { DockerEndpoint } from './docker-endpoint.js';

interface DockerodeError {
  statusCode?: number;
  code?: string;
  message?: string;
  json?: { message?: string } | null;
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/** true for "the engine is not there", as opposed to an answer from the engine. */
export function isUnreachable(err: unknown): boolean {
  const e = err as DockerodeError;
  return typeof e?.code === 'string' && UNREACHABLE.has(e.code);
}

export function engineUnreachable(endpoint: DockerEndpoint, err: unknown): SandboxDeskError {
  const code = (err as DockerodeError).code ?? 'error';
  const why = code === 'EACCES' ? 'permission denied on the socket' : code === 'ENOENT' ? 'no socket there' : code;
  return new SandboxDeskError(
    'engine_unreachable',
    `The Docker engine is not reachable at ${endpoint.url} (from ${endpoint.origin}): ${why}`,
    {
      hint:
        code === 'EACCES'
          ? 'add your user to the docker group (sudo usermod -aG docker $USER, then log in again), or run as root'
          : 'start it: `sudo systemctl start docker` (or `npm run setup`, which starts dockerd); set DOCKER_HOST if it listens elsewhere',
      cause: err,
    },
  );
}

/** The engine's own message, without dockerode's "(HTTP code 404) no such container -" prefix. */
export function engineMessage(err: unknown): string {
  const e = err as DockerodeError;
  return e.json?.message ?? e.message ?? String(err);
}

export function statusOf(err: unknown): number | undefined {
  return (err as DockerodeError).statusCode;
}
