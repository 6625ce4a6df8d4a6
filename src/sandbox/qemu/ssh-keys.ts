import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { SandboxDeskError } from '../../shared/errors.js';
import { runArgv } from '../run-argv.js';

export interface KeyPair {
  privateKeyPath: string;
  privateKey: string;
  publicKey: string;
}

/** An ed25519 key pair at `path` (0600) and `path.pub`, made once and reused. */
export async function ensureKeyPair(path: string, comment: string): Promise<KeyPair> {
  if (!existsSync(path) || !existsSync(`${path}.pub`)) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    rmSync(path, { force: true });
    rmSync(`${path}.pub`, { force: true });
    const r = await runArgv(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path]);
    if (r.code !== 0) {
      throw new SandboxDeskError('backend_unavailable', `could not make an SSH key (${path}): ${r.stderr.trim() || `exit ${r.code}`}`, {
        hint: 'install openssh-client (`npm run setup` does)',
      });
    }
  }
  return { privateKeyPath: path, privateKey: readFileSync(path, 'utf8'), publicKey: readFileSync(`${path}.pub`, 'utf8').trim() };
}
