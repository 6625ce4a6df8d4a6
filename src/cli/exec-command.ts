/**
 * What `sandbox-desk exec` does once its flags are parsed: one `exec` call, the command's bytes on
 * stdout/stderr (or one JSON object), its exit code as ours. Shared by commander's `exec` action
 * (main.ts) and the fast path (fast-exec.ts), so there is one behaviour whichever parsed the flags.
 * Light on purpose — the fast path loads it before anything else: types from the contract only.
 */
import type { ExecResult } from '../api/contract.js';
import type { DeskClient } from '../client/http-client.js';
import { SandboxDeskError } from '../shared/errors.js';
import { printJson, printWarnings, type Out } from './output.js';
import { parseTimeout } from './parse-args.js';

export interface ExecFlags {
  json?: boolean;
  session?: string;
  parent?: string;
  workdir?: string;
  step?: string;
  timeout?: string;
  /** false with --no-shell. */
  shell: boolean;
  user?: string;
}

/** Runs `words` in sandbox `name`; resolves to the command's exit code. Ctrl-C (or SIGTERM) interrupts it. */
export async function runExec(client: () => Promise<DeskClient>, out: Out, name: string, words: string[], o: ExecFlags): Promise<number> {
  if (words.length === 0)
    throw new SandboxDeskError('invalid_input', 'no command given', {
      hint: 'put the command after --, e.g. sandbox-desk exec NAME -- pwd',
    });
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const c = await client();
    const r = await c
      .call(
        'exec',
        {
          sandbox: name,
          command: words.join(' '),
          session: o.session,
          parent: o.parent,
          workdir: o.workdir,
          stepId: o.step,
          timeoutSeconds: o.timeout === undefined ? undefined : parseTimeout(o.timeout),
          mode: o.shell ? 'shell' : 'oneshot',
          user: o.user,
        },
        { signal: abort.signal },
      )
      .catch((err: unknown) => {
        throw abort.signal.aborted ? err : execCutOff(err, o.session);
      });
    if (o.json) {
      printJson(out, r satisfies ExecResult);
    } else {
      out.stdout(Buffer.from(r.stdout, r.encoding.stdout));
      out.stderr(Buffer.from(r.stderr, r.encoding.stderr));
      printWarnings(out, r.warnings);
    }
    return r.exitCode;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/**
 * An `exec` whose service went away before answering (it was killed, or crashed): the command was
 * interrupted (or never began), so its cwd was not observed and its session's record keeps the last
 * observed cwd — said as such, with the same facts an interrupted result has, rather than as a bare
 * transport fault. Other errors pass unchanged.
 */
function execCutOff(err: unknown, session: string | undefined): unknown {
  if (!(err instanceof SandboxDeskError) || err.code !== 'service_unavailable') return err;
  const key = session ?? 'default';
  return new SandboxDeskError(
    'service_unavailable',
    `the command was interrupted: ${err.message}; its cwd was not observed, and session ${key} keeps its last observed cwd`,
    {
      hint: 'run it again (the next command starts a new service, which re-adopts the running sandbox); `sandbox-desk replay events NAME` shows it as interrupted',
      details: { interrupted: true, cwdObserved: false, session: key },
      cause: err,
    },
  );
}
