import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { runInContainer } from './docker-api-exec.js';

/** One frame of the engine's multiplexed exec stream: stream 1 (stdout) or 2 (stderr). */
const frame = (stream: 1 | 2, text: string): Buffer => {
  const body = Buffer.from(text);
  const head = Buffer.alloc(8);
  head[0] = stream;
  head.writeUInt32BE(body.length, 4);
  return Buffer.concat([head, body]);
};

/** The engine's side (the boundary): an exec whose stream sends `chunks` and then ends (or never does). */
function engine(chunks: Buffer[], exitCode: number, ends = true): { docker: Docker; asked: unknown[] } {
  const asked: unknown[] = [];
  const docker = {
    getContainer: () => ({
      exec: async (opts: unknown) => {
        asked.push(opts);
        return {
          start: async () => {
            const s = new PassThrough();
            setImmediate(() => {
              for (const c of chunks) s.write(c);
              if (ends) s.end();
            });
            return s;
          },
          inspect: async () => ({ ExitCode: exitCode }),
        };
      },
    }),
  } as unknown as Docker;
  return { docker, asked };
}

describe('runInContainer (the engine API, no docker CLI)', () => {
  it('splits stdout from stderr across frames split anywhere, and gives the exit code; the user is passed (none: the image’s)', async () => {
    const all = Buffer.concat([frame(1, '/home/'), frame(2, 'warn\n'), frame(1, 'agent\n')]);
    const e = engine([all.subarray(0, 5), all.subarray(5, 17), all.subarray(17)], 0);
    expect(await runInContainer(e.docker, 'c1', ['bash', '-c', 'x'], { user: null, timeoutMs: 5000 })).toEqual({
      code: 0,
      stdout: '/home/agent\n',
      stderr: 'warn\n',
    });
    expect(e.asked).toEqual([{ Cmd: ['bash', '-c', 'x'], User: '', AttachStdout: true, AttachStderr: true }]);
  });

  it('a command that never ends is given up after its timeout, with the reason', async () => {
    const e = engine([frame(1, 'x')], 0, false);
    await expect(runInContainer(e.docker, 'c1', ['sleep', '9'], { user: 'root', timeoutMs: 50 })).rejects.toThrow(
      /did not finish within 50 ms/,
    );
  });
});
