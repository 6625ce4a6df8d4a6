import type { z } from 'zod';
import { asSandboxDeskError, SandboxDeskError } from '../shared/errors.js';
import { posix } from 'node:path';
import type { FileTransferRoutes } from './file-transfer-routes.js';
import { readProviderDefaultCwd } from '../cwd/declared-default-cwd.js';
import { isolationOf } from '../sandbox/provider.js';
import { API, type ApiMethod, type ApiResponse, type ApiResult, type StreamGrant } from './contract.js';
import type { SandboxDesk } from './sandbox-desk.js';
import { validate } from './validate.js';
import { ANSWER_ENVELOPE_BYTES, ANSWER_MAX_BYTES, fitAnswer } from '../exec/output-fit.js';
import { DEFAULT_TAIL } from './log-service.js';
import { CONTROL_WAIT_DEFAULT_MS } from '../desktop/control-wait.js';

/** What only the server can do: hand out single-use tickets for the streams it serves. */
export interface StreamIssuer {
  screenTicket(sandbox: string, viewerId?: string): StreamGrant & { viewerId: string };
  terminalTicket(terminalId: string): StreamGrant;
  logTicket(grant: { sandbox: string; source: string; tail: number }): StreamGrant;
  /** Absent where no server serves `/ws/events` (then the Electron bridge carries the events). */
  eventsTicket?(): StreamGrant;
  /** The file panel's HTTP transfers (file-transfer-routes.ts); absent where no server serves them. */
  fileTransfers?: Pick<FileTransferRoutes, 'uploadTicket' | 'downloadTicket'>;
}

function transfersOf(streams: StreamIssuer): Pick<FileTransferRoutes, 'uploadTicket' | 'downloadTicket'> {
  if (!streams.fileTransfers)
    throw new SandboxDeskError('unsupported', 'file transfers need the local server (the window or `sandbox-desk serve`)');
  return streams.fileTransfers;
}

/** A path the sandbox resolved that the file scripts cannot take back as an argument (a line break in a name). */
const LINE_BREAK = /[\n\r]/;

type Params<M extends ApiMethod> = z.output<(typeof API)[M]['params']>;
/** What a transport knows about one call besides its params. */
export interface CallContext {
  /** Aborted when the caller went away before the answer (an HTTP client dropped its connection): `exec` interrupts its command. */
  signal?: AbortSignal;
}
type Handlers = { [M in ApiMethod]: (p: Params<M>, ctx: CallContext) => Promise<ApiResult<M>> | ApiResult<M> };

/**
 * The one implementation of the contract's method table, shared by every transport (Electron IPC,
 * the browser mode's HTTP, tests): params are validated against the contract's schema, results and
 * errors come back as data.
 */
export function createDispatcher(
  desk: SandboxDesk,
  streams: StreamIssuer,
): (method: unknown, params: unknown, ctx?: CallContext) => Promise<ApiResponse<ApiMethod>> {
  const handlers: Handlers = {
    backends: async () => {
      await desk.pluginsLoaded();
      return desk.registry.all().map((p) => {
        const declared = readProviderDefaultCwd(p).raw;
        return {
          name: p.name,
          description: p.description,
          isContainer: p.isContainer,
          isolation: isolationOf(p),
          supportsStreams: p.supportsStreams,
          defaultCwd: typeof declared === 'string' ? declared : null,
        };
      });
    },
    // Without the isolated host's internals (pid, restarts): the UI needs what failed and why.
    plugins: async () => (await desk.listPlugins()).map(({ host: _host, ...p }) => p),
    disabledPlugins: () => desk.disabledPlugins(),
    agentTokenCreate: (p) => {
      const { token, info } = desk.store.agentTokens.create({
        label: p.label ?? null,
        sandboxes: p.sandboxes ? [...new Set(p.sandboxes)] : null,
      });
      return { token, info };
    },
    agentTokenList: () => desk.store.agentTokens.list(),
    agentTokenRemove: (p) => {
      if (!desk.store.agentTokens.remove(p.id))
        throw new SandboxDeskError('not_found', `no agent token ${JSON.stringify(p.id)}`, { hint: 'see sandbox-desk token list' });
      return { removed: p.id };
    },
    listSandboxes: () => desk.listSandboxes(),
    inspectSandbox: (p) => desk.inspectSandbox(p.name),
    createSandbox: (p) => desk.createSandbox(p),
    startSandbox: (p) => desk.startSandbox(p.name),
    stopSandbox: (p) => desk.stopSandbox(p.name),
    sandboxProgress: (p) => desk.sandboxProgress(p.name),
    cancelOperation: (p) => desk.cancelOperation(p.name),
    removeSandbox: async (p) => {
      await desk.removeSandbox(p.name, { force: p.force });
      return { removed: p.name };
    },
    listSessions: (p) => desk.listSessions(p.sandbox),
    createSession: (p) => desk.createSession(p),
    removeSession: (p) => {
      desk.removeSession(p.sandbox, p.key);
      return { removed: p.key };
    },
    exec: async (p, ctx) => {
      const { stdoutBytes, stderrBytes, ...result } = await desk.exec({ ...p, ...(ctx.signal ? { signal: ctx.signal } : {}) });
      // The same cap as MCP's: the whole JSON answer (with its envelope's headroom) fits 8 MiB.
      return fitAnswer(
        result,
        { stdout: stdoutBytes, stderr: stderrBytes },
        { maxBytes: ANSWER_MAX_BYTES - ANSWER_ENVELOPE_BYTES, copies: 1, size: (r) => Buffer.byteLength(JSON.stringify(r)) },
      );
    },
    desktopStatus: (p) => desk.desktop.status(p.sandbox, { placement: p.placement }),
    desktopStart: (p) =>
      desk.desktop.start(p.sandbox, {
        placement: p.placement,
        geometry: p.geometry,
        grantShellDisplay: p.grantShellDisplay,
        ...(p.record !== undefined ? { record: p.record } : {}),
      }),
    desktopStop: (p) => desk.desktop.stop(p.sandbox),
    desktopLastAction: (p) => desk.desktop.lastAction(p.sandbox),
    desktopScreenshot: async (p) => {
      const { frame, image } = await desk.desktop.screenshot(p.sandbox, {
        maxWidth: p.maxWidth,
        maxHeight: p.maxHeight,
        format: p.format,
        quality: p.quality,
      });
      return { frame, image: image.toString('base64') };
    },
    desktopAct: (p) => desk.desktop.act(p.sandbox, p.action, { frameId: p.frameId }),
    desktopBrowserEndpoint: (p) => desk.desktop.browserEndpoint(p.sandbox),
    screenTicket: async (p) => {
      await desk.inspectSandbox(p.sandbox);
      return { ...streams.screenTicket(p.sandbox, p.viewerId), clipboardMaxBytes: desk.config.clipboard.maxBytes };
    },
    lease: (p) => desk.desktop.lease(p.sandbox),
    takeControl: (p) => desk.desktop.takeControl(p.sandbox, p.viewerId),
    giveBack: (p) => desk.desktop.giveBack(p.sandbox, p.viewerId),
    waitForControl: (p) => desk.desktop.waitForControl(p.sandbox, p.timeoutMs ?? CONTROL_WAIT_DEFAULT_MS),
    terminalOpen: async (p) => {
      const { terminal, session, cwd } = await desk.io.openTerminal(p);
      return { ...streams.terminalTicket(terminal.id), terminalId: terminal.id, session, cwd };
    },
    poolList: () => desk.pools.list(),
    poolSet: (p) => desk.pools.set(p),
    poolDrain: (p) => desk.pools.drain(p.all ? undefined : p.template),
    sandboxNetwork: (p) => desk.sandboxNetwork(p.name, { mode: p.mode, allow: p.allow, deny: p.deny }),
    networkLog: (p) => desk.network.log(p.sandbox, p.limit),
    callLog: (p) =>
      desk.network.linkCalls(desk.store.callLog.list({ sandbox: p.sandbox, session: p.session, limit: p.limit, beforeId: p.beforeId })),
    terminalResize: (p) => {
      desk.io.terminal(p.terminalId).resize(p.cols, p.rows);
      return { ok: true as const };
    },
    listTerminals: (p) => desk.io.listTerminals(p.sandbox),
    terminalAttach: (p) => {
      const t = desk.io.terminalInfo(p.terminalId);
      return { ...streams.terminalTicket(t.terminalId), terminalId: t.terminalId, session: t.session, cwd: t.startedIn };
    },
    terminalClose: (p) => {
      desk.io.closeTerminal(p.terminalId);
      return { closed: p.terminalId };
    },
    listImages: () => desk.images.list(),
    inspectImage: (p) => desk.images.inspect(p.ref),
    removeImage: (p) => desk.images.remove(p.ref),
    buildImage: (p) =>
      p.vmName !== undefined
        ? desk.images.buildVm(p.vmName).task
        : desk.images.buildDocker({ tag: p.tag!, context: p.context, file: p.file }).task,
    pullImage: (p) => desk.images.pull(p.ref).task,
    buildVmTemplate: (p) => desk.images.buildVmTemplate(p).task,
    imageTask: (p) => desk.images.tasks.get(p.id),
    cancelImageTask: (p) => desk.images.tasks.cancel(p.id),
    logSources: (p) => desk.logs.sources(p.sandbox),
    readLog: (p) => desk.logs.read(p.sandbox, p.source, p.tail),
    logTicket: async (p) => {
      // Checked now, so a source that does not exist is an answer here, not a closed stream later.
      const src = await desk.logs.resolve(p.sandbox, p.source);
      return { ...streams.logTicket({ sandbox: p.sandbox, source: src.id, tail: p.tail ?? DEFAULT_TAIL }), source: src.id };
    },
    sandboxStats: (p) => desk.stats.sample(p.sandbox),
    engineInfo: () => desk.stats.engineInfo(),
    checkpointSandbox: (p) => desk.checkpoints.checkpoint(p),
    listCheckpoints: (p) => desk.checkpoints.list(p.sandbox),
    restoreSandbox: (p) => desk.checkpoints.restore(p.sandbox, p.checkpoint),
    forkSandbox: (p) => desk.checkpoints.fork(p),
    removeCheckpoint: (p) => desk.checkpoints.remove(p.id),
    pauseSandbox: (p) => desk.checkpoints.pause(p.name),
    resumeSandbox: (p) => desk.checkpoints.resume(p.name),
    eventsTicket: () => {
      if (!streams.eventsTicket) throw new SandboxDeskError('unsupported', 'this transport serves no event stream');
      return streams.eventsTicket();
    },
    listOperations: (p) => desk.listOperations(p.limit),
    listFiles: async (p) => {
      const r = await desk.io.listDir({ sandbox: p.sandbox, session: p.session, path: p.path });
      return { path: r.path, cwd: r.cwd, session: r.session, entries: r.entries };
    },
    makeDirectory: async (p) => {
      const r = await desk.io.makeDirectory(p);
      desk.events.publish({ topic: 'files', sandbox: p.sandbox, path: r.path, reason: 'folder' });
      return { path: r.path, cwd: r.cwd };
    },
    fileUploadTicket: async (p) => {
      const transfers = transfersOf(streams);
      const checked = await desk.io.checkUpload(p);
      // The ticket names the folder as resolved now: a cd before the bytes arrive does not move them.
      const dir = posix.dirname(checked.path);
      // A resolved folder with a line break cannot be named to the sandbox's file scripts again: the
      // ticket then keeps the folder as asked (relative to the session's cwd), as cp always did.
      const named = LINE_BREAK.test(dir) ? p.dir : dir;
      return { ...transfers.uploadTicket({ ...p, ...(named !== undefined ? { dir: named } : {}) }), path: checked.path, cwd: checked.cwd };
    },
    fileDownloadTicket: async (p) => {
      const transfers = transfersOf(streams);
      const r = await desk.io.readFileRange({ sandbox: p.sandbox, session: p.session, path: p.path, offset: 0, length: 0 });
      return {
        ...transfers.downloadTicket({ sandbox: p.sandbox, session: p.session, path: LINE_BREAK.test(r.path) ? p.path : r.path }),
        path: r.path,
        name: posix.basename(r.path),
        size: r.size,
      };
    },
    replayList: (p) => ({ recordings: desk.replay.list(p.sandbox) }),
    replayEvents: (p) => desk.replay.events(p.sandbox, { since: p.since, until: p.until }),
    replayFrame: (p) => desk.replay.frame(p),
    replayCast: (p) => desk.replay.cast(p.sandbox, p.terminalId),
    replayExport: (p, ctx) => desk.replay.export(p, ctx.signal ? { signal: ctx.signal } : {}),
    replayRemove: (p) => desk.replay.remove(p.sandbox),
    desktopClipboard: async (p) => {
      const max = desk.config.clipboard.maxBytes;
      if (p.text === undefined) {
        const text = await desk.desktop.clipboard(p.sandbox, max);
        return { text, bytes: Buffer.byteLength(text) };
      }
      return { text: p.text, bytes: await desk.desktop.setClipboard(p.sandbox, p.text, max) };
    },
  };

  return async (method, params, ctx = {}) => {
    if (typeof method !== 'string' || !Object.hasOwn(API, method)) {
      return { error: { code: 'invalid_input', message: `unknown method ${JSON.stringify(method)}` } };
    }
    const m = method as ApiMethod;
    try {
      const valid = validate(API[m].params, params ?? {});
      const handler = handlers[m] as (p: unknown, ctx: CallContext) => unknown;
      return { ok: (await handler(valid, ctx)) as ApiResult<ApiMethod> };
    } catch (err) {
      return { error: asSandboxDeskError(err).toJSON() };
    }
  };
}
