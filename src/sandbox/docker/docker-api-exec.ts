import type Docker from 'dockerode';
import { splitLogFrames } from './docker-log-frames.js';

/**
 * A short command run in a container through the engine's API: no `docker` CLI process to start, which
 * on a busy two-core machine cost as much as the command itself (a create's home measurement, a warm
 * claim's desktop folder). Its exit code and its output.
 */
export async function runInContainer(
  docker: Docker,
  id: string,
  argv: string[],
  opts: { user?: string | null; timeoutMs: number },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const exec = await docker.getContainer(id).exec({ Cmd: argv, User: opts.user ?? '', AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => {
        stream.destroy();
        reject(new Error(`the command did not finish within ${opts.timeoutMs} ms`));
      }, opts.timeoutMs);
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', reject);
    });
  } finally {
    clearTimeout(timer);
  }
  return { code: (await exec.inspect()).ExitCode, ...splitLogFrames(Buffer.concat(chunks)) };
}
