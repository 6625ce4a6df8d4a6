import { existsSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { posix } from 'node:path';
import type { Command } from 'commander';
import type { DeskClient } from '../client/http-client.js';
import { httpUpload, startHttpDownload } from '../client/file-transfer.js';
import { SandboxDeskError } from '../shared/errors.js';
import { printable } from '../shared/printable.js';
import { localTarget, receiveDownload } from './cp-download.js';
import { printJson, type Out } from './output.js';

/** `NAME:PATH` (a sandbox path, relative to the session's cwd) or a local path; like `docker cp`. */
export function parseCpArg(arg: string): { sandbox: string; path: string } | { local: string } {
  const m = /^([A-Za-z0-9][A-Za-z0-9_.-]*):(.*)$/s.exec(arg);
  // "./a:b" or "/x:y" are local paths with a colon; only NAME: at the very start names a sandbox.
  if (m && !arg.startsWith('.') && !arg.startsWith('/')) return { sandbox: m[1]!, path: m[2] || '.' };
  return { local: arg };
}

/**
 * `sandbox-desk cp SRC DEST`: one file into or out of a sandbox, streamed through the exec prefix
 * (file-transfer.ts): into a sandbox it lands under a temporary name and is renamed when complete,
 * after a free-space check; out of one it is written next to the target and renamed, likewise
 * (cp-download.ts: where it goes is decided here, from the arguments, never by the sandbox).
 */
export function addCpCommand(program: Command, client: () => Promise<DeskClient>, out: Out): void {
  program
    .command('cp <src> <dest>')
    .description("copy a file into or out of a sandbox (NAME:PATH, relative to the session's cwd), streamed")
    .option('--session <key>', 'whose cwd a relative sandbox path starts from (default: the default session)')
    .option('--json', 'machine-readable output')
    .action(async (src: string, dest: string, o: { session?: string; json?: boolean }) => {
      const from = parseCpArg(src);
      const to = parseCpArg(dest);
      // The local side of a download first, from the person's own arguments: a missing folder is said
      // before the core opens, and nothing the sandbox sends chooses where the file goes.
      const target = 'sandbox' in from && 'local' in to ? localTarget(from.path, to.local, from.sandbox) : null;
      const c = await client();
      const session = o.session;
      if ('local' in from && 'sandbox' in to) {
        if (!existsSync(from.local) || !statSync(from.local).isFile())
          throw new SandboxDeskError('invalid_input', `${from.local} is not a file on this machine`, {
            hint: 'cp copies one regular file',
          });
        const size = statSync(from.local).size;
        // Into a folder that exists (or "NAME:" / a path ending in /): under the file's own name.
        const intoDir =
          to.path.endsWith('/') ||
          to.path === '.' ||
          (await c.call('listFiles', { sandbox: to.sandbox, path: to.path, ...(session ? { session } : {}) }).then(
            () => true,
            () => false,
          ));
        const dir = intoDir ? to.path : posix.dirname(to.path);
        const name = intoDir ? basename(from.local) : posix.basename(to.path);
        const done = await httpUpload(c, { sandbox: to.sandbox, dir, name, size, ...(session ? { session } : {}) }, from.local);
        if (o.json) printJson(out, done);
        else out.stderr(`copied ${done.bytes} bytes to ${to.sandbox}:${printable(done.path)}\n`);
        return;
      }
      if ('sandbox' in from && target) {
        const srcFile = await startHttpDownload(c, { sandbox: from.sandbox, path: from.path, ...(session ? { session } : {}) });
        const { bytes } = await receiveDownload(srcFile, target, out);
        if (o.json) printJson(out, { path: target.target, bytes, from: srcFile.path });
        else out.stderr(`copied ${bytes} bytes from ${from.sandbox}:${printable(srcFile.path)} to ${target.target}\n`);
        return;
      }
      throw new SandboxDeskError(
        'invalid_input',
        'cp copies between this machine and one sandbox: exactly one of SRC and DEST is NAME:PATH',
        {
          hint: 'e.g. sandbox-desk cp ./notes.txt web:  or  sandbox-desk cp web:report.pdf .',
        },
      );
    });
}
