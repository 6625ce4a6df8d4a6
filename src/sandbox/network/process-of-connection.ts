/**
 * How a connection's process reads on the network log (issue 17: "process where known"). The egress
 * pump (egress-pump.c) finds it as it accepts the connection: the socket's inode by its exact 4-tuple
 * in the sandbox's network namespace, the process holding it among the container's own, and that
 * process's name, command line, pid as the sandbox sees it (NSpid) and ancestry (up to the container's
 * init). Here it becomes the log's short line.
 *
 * Best effort, and only where the app may read those /proc entries and enter the namespace (root):
 * otherwise the pump finds nothing and the log says null, never an error.
 */
import type { FoundProcess } from './egress-pump.js';

/** A connection's process as the log shows it, and its pid ancestry inside the sandbox. */
export interface ConnectionProcess {
  process: string;
  pid: number;
  ancestry: number[];
}

/** The longest command line shown: a wrapper's `bash -c <script>` would otherwise fill the log with the script. */
const MAX_SHOWN = 120;

export function describeFound(found: FoundProcess): ConnectionProcess {
  const cmdline = found.cmdline.replace(/\0+$/, '').replace(/\0/g, ' ');
  // The exec wrapper (src/exec/wrapper-script.ts) is itself the shell a command's builtins run in.
  const flat = cmdline.includes('__sd_enter') ? 'the command shell of sandbox-desk exec' : cmdline.replace(/\s+/g, ' ').trim();
  const shown = flat.length > MAX_SHOWN ? `${flat.slice(0, MAX_SHOWN - 1)}…` : flat;
  const comm = found.comm.trim() || '?';
  return {
    process: shown ? `${comm} (pid ${found.pid}): ${shown}` : `${comm} (pid ${found.pid})`,
    pid: found.pid,
    ancestry: found.ancestry,
  };
}
