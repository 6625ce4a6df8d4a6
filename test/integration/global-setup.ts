import { execFileSync } from 'node:child_process';

/**
 * Integration tests claim a real Docker engine and the sandbox-desk/base image. Without them they
 * fail here, once, saying what to do — never skip silently.
 */
export default function setup(): void {
  try {
    execFileSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'pipe', timeout: 20_000 });
  } catch {
    throw new Error('integration tests need a running Docker engine: run `npm run setup` (it starts dockerd)');
  }
  try {
    execFileSync('docker', ['image', 'inspect', 'sandbox-desk/base:latest'], { stdio: 'pipe', timeout: 20_000 });
  } catch {
    throw new Error('integration tests need the image sandbox-desk/base:latest: run `npm run setup` to build it');
  }
}
