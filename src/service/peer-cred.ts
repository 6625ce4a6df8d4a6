import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { projectRoot } from '../platform/project-root.js';

export interface PeerCredentials {
  uid: number;
  pid: number;
}

/** The compiled helper (src/service/native/peer-cred.c), built by `npm run build` into dist/native/. */
export function peerCredBinary(): string {
  const bin = join(projectRoot(), 'dist', 'native', 'peer-cred');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\``);
  return bin;
}

/**
 * Who is at the other end of an accepted Unix socket connection. Node cannot ask (no SO_PEERCRED), so
 * a tiny helper is given the connection as its fd 3 and prints "<uid> <pid>". It never reads the
 * socket, so the client's first bytes stay for the HTTP server.
 */
export function peerCredentials(socket: Socket, binary = peerCredBinary()): Promise<PeerCredentials> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, [], { stdio: ['ignore', 'pipe', 'pipe', socket] });
    let out = '';
    let err = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const m = /^(\d+) (-?\d+)\n$/.exec(out);
      if (code === 0 && m) return resolve({ uid: Number(m[1]), pid: Number(m[2]) });
      reject(new Error(err.trim() || `peer-cred exited with ${code}`));
    });
  });
}

/** The admission rule of the service's socket: only this process's own uid. */
export async function admitSameUser(socket: Socket, ownUid = process.getuid?.() ?? -1, binary?: string): Promise<string | null> {
  const peer = await peerCredentials(socket, binary);
  if (peer.uid === ownUid) return null;
  return `the connecting process (pid ${peer.pid}) runs as uid ${peer.uid}; this service serves only uid ${ownUid}`;
}
