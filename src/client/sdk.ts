/**
 * The TypeScript SDK of Sandbox Desk (`import { connect } from 'sandbox-desk'`): friendly, typed
 * wrappers over the contract's methods, its event stream and its file routes, through a DeskClient.
 * Everything here is the same contract the CLI, the window and MCP use; `desk.client.call(...)` reaches
 * any method the wrappers do not name.
 */
import type {
  ApiParams,
  CheckpointInfo,
  CoreEvent,
  CreateSandboxResult,
  DesktopAction,
  DesktopActionResult,
  DesktopFrame,
  DesktopStatus,
  EventFrame,
  ExecRequest,
  ExecResult,
  FileListing,
  SandboxInfo,
  SessionInfo,
} from '../api/contract.js';
import { connect as connectService, type ConnectOptions } from './connect.js';
import { httpUpload, startHttpDownload } from './file-transfer.js';
import type { DeskClient } from './http-client.js';

export { createHttpClient, type DeskClient, type ClientTarget, type CallOptions } from './http-client.js';
export type { ConnectOptions } from './connect.js';
export { SandboxDeskError } from '../shared/errors.js';
export type * from '../api/contract.js';

/** A command's result with its output as bytes too (`stdout` may be base64 when it was not UTF-8). */
export interface ExecOutput extends ExecResult {
  stdoutBytes: Buffer;
  stderrBytes: Buffer;
}

export interface Desk {
  /** The underlying client: `desk.client.call(method, params)` for any method of the contract. */
  readonly client: DeskClient;
  sandboxes: {
    list(): Promise<SandboxInfo[]>;
    inspect(name: string): Promise<SandboxInfo>;
    create(req: ApiParams<'createSandbox'>): Promise<CreateSandboxResult>;
    start(name: string): Promise<SandboxInfo>;
    stop(name: string): Promise<SandboxInfo>;
    rm(name: string, opts?: { force?: boolean }): Promise<void>;
  };
  /** Runs a command in the sandbox's session shell (default session "default"). */
  exec(sandbox: string, command: string, opts?: Omit<ExecRequest, 'sandbox' | 'command'> & { signal?: AbortSignal }): Promise<ExecOutput>;
  sessions: {
    list(sandbox: string): Promise<SessionInfo[]>;
    create(sandbox: string, key: string, opts?: { parent?: string; cwd?: string }): Promise<SessionInfo>;
    rm(sandbox: string, key: string): Promise<void>;
  };
  files: {
    list(sandbox: string, path?: string, opts?: { session?: string }): Promise<FileListing>;
    /** A file's bytes (relative paths from the session's cwd); fails if it changed while read. */
    read(sandbox: string, path: string, opts?: { session?: string }): Promise<Buffer>;
    /** Writes `data` as `name` in folder `dir` (default: the session's cwd); returns where it landed. */
    write(sandbox: string, name: string, data: Buffer, opts?: { dir?: string; session?: string }): Promise<{ path: string; bytes: number }>;
  };
  desktop: {
    start(sandbox: string, opts?: Omit<ApiParams<'desktopStart'>, 'sandbox'>): Promise<DesktopStatus>;
    stop(sandbox: string): Promise<DesktopStatus>;
    status(sandbox: string): Promise<DesktopStatus>;
    /** A frame of the live screen: its image and its id, for actions in its coordinates. */
    screenshot(sandbox: string, opts?: Omit<ApiParams<'desktopScreenshot'>, 'sandbox'>): Promise<{ frame: DesktopFrame; image: Buffer }>;
    /** One action; with `frameId`, x/y are in that frame's pixels (refused as stale_frame if the screen changed). */
    act(sandbox: string, action: DesktopAction, opts?: { frameId?: string }): Promise<DesktopActionResult>;
    click(
      sandbox: string,
      x: number,
      y: number,
      opts?: { frameId?: string; button?: 1 | 2 | 3; double?: boolean },
    ): Promise<DesktopActionResult>;
    type(sandbox: string, text: string): Promise<DesktopActionResult>;
    key(sandbox: string, keys: string): Promise<DesktopActionResult>;
  };
  checkpoints: {
    create(sandbox: string, opts?: { label?: string; memory?: boolean }): Promise<CheckpointInfo>;
    list(sandbox?: string): Promise<CheckpointInfo[]>;
    restore(sandbox: string, checkpoint: string): Promise<SandboxInfo>;
    fork(sandbox: string, checkpoint: string, as: string, count?: number): Promise<SandboxInfo[]>;
    rm(id: string): Promise<void>;
  };
  replay: {
    list(sandbox?: string): Promise<import('../shared/replay-types.js').ReplayRecording[]>;
    events(sandbox: string, range?: { since?: string; until?: string }): Promise<import('../shared/replay-types.js').ReplayEvent[]>;
    frame(sandbox: string, at: string, opts?: { maxWidth?: number; maxHeight?: number }): Promise<{ image: Buffer; at: string }>;
    export(sandbox: string, out: string, opts?: { from?: string; to?: string; format?: 'mp4' | 'webm' }): Promise<unknown>;
  };
  /** The core's pushed events (sandbox state, operations, files…), in order, until `signal` aborts or the stream ends. */
  events(opts?: { signal?: AbortSignal }): AsyncIterable<CoreEvent>;
  close(): Promise<void>;
}

async function readAll(s: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(chunks);
}

/** The SDK's wrappers over any DeskClient (the service's socket, or `createHttpClient` to a `serve`). */
export function createDesk(client: DeskClient): Desk {
  const call = client.call.bind(client);
  return {
    client,
    sandboxes: {
      list: () => call('listSandboxes', {}),
      inspect: (name) => call('inspectSandbox', { name }),
      create: (req) => call('createSandbox', req),
      start: (name) => call('startSandbox', { name }),
      stop: (name) => call('stopSandbox', { name }),
      rm: async (name, opts = {}) => void (await call('removeSandbox', { name, force: opts.force ?? false })),
    },
    async exec(sandbox, command, opts = {}) {
      const { signal, ...rest } = opts;
      const r = await client.call('exec', { sandbox, command, ...rest }, signal ? { signal } : {});
      return { ...r, stdoutBytes: Buffer.from(r.stdout, r.encoding.stdout), stderrBytes: Buffer.from(r.stderr, r.encoding.stderr) };
    },
    sessions: {
      list: (sandbox) => call('listSessions', { sandbox }),
      create: (sandbox, key, opts = {}) => call('createSession', { sandbox, key, ...opts }),
      rm: async (sandbox, key) => void (await call('removeSession', { sandbox, key })),
    },
    files: {
      list: (sandbox, path, opts = {}) => call('listFiles', { sandbox, ...(path !== undefined ? { path } : {}), ...opts }),
      async read(sandbox, path, opts = {}) {
        const d = await startHttpDownload(client, { sandbox, path, ...opts });
        const bytes = await readAll(d.output);
        await d.done;
        return bytes;
      },
      async write(sandbox, name, data, opts = {}) {
        const { Readable } = await import('node:stream');
        return httpUpload(client, { sandbox, name, size: data.length, ...opts }, Readable.from([data]));
      },
    },
    desktop: {
      start: (sandbox, opts = {}) => call('desktopStart', { sandbox, ...opts }),
      stop: (sandbox) => call('desktopStop', { sandbox }),
      status: (sandbox) => call('desktopStatus', { sandbox }),
      async screenshot(sandbox, opts = {}) {
        const r = await call('desktopScreenshot', { sandbox, ...opts });
        return { frame: r.frame, image: Buffer.from(r.image, 'base64') };
      },
      act: (sandbox, action, opts = {}) => call('desktopAct', { sandbox, action, ...opts }),
      click: (sandbox, x, y, opts = {}) => {
        const { frameId, ...rest } = opts;
        return call('desktopAct', { sandbox, action: { kind: 'click', x, y, ...rest }, ...(frameId ? { frameId } : {}) });
      },
      type: (sandbox, text) => call('desktopAct', { sandbox, action: { kind: 'type', text } }),
      key: (sandbox, keys) => call('desktopAct', { sandbox, action: { kind: 'key', keys } }),
    },
    checkpoints: {
      create: async (sandbox, opts = {}) => (await call('checkpointSandbox', { sandbox, ...opts })).checkpoint,
      list: (sandbox) => call('listCheckpoints', { sandbox }),
      restore: async (sandbox, checkpoint) => (await call('restoreSandbox', { sandbox, checkpoint })).sandbox,
      fork: async (sandbox, checkpoint, as, count) =>
        (await call('forkSandbox', { sandbox, checkpoint, as, ...(count !== undefined ? { count } : {}) })).sandboxes,
      rm: async (id) => void (await call('removeCheckpoint', { id })),
    },
    replay: {
      list: async (sandbox) => (await call('replayList', { sandbox })).recordings,
      events: async (sandbox, range = {}) => (await call('replayEvents', { sandbox, ...range })).events,
      async frame(sandbox, at, opts = {}) {
        const f = await call('replayFrame', { sandbox, at, ...opts });
        return { image: Buffer.from(f.data, 'base64'), at: f.at };
      },
      export: (sandbox, out, opts = {}) => call('replayExport', { sandbox, out, ...opts }),
    },
    events: (opts = {}) => eventStream(client, opts.signal),
    close: () => client.close(),
  };
}

/** /ws/events as an async iterator: each event once, in order; ends when the stream closes or `signal` aborts. */
async function* eventStream(client: DeskClient, signal?: AbortSignal): AsyncGenerator<CoreEvent> {
  const ws = client.openStream(await client.call('eventsTicket', {}));
  const queue: CoreEvent[] = [];
  let ended: Error | null | undefined;
  let wake: (() => void) | null = null;
  const poke = (): void => {
    wake?.();
    wake = null;
  };
  ws.on('message', (d: Buffer) => {
    const f = JSON.parse(d.toString('utf8')) as EventFrame;
    if (f.type === 'event') queue.push(f.event);
    poke();
  });
  ws.on('error', (err: Error) => {
    ended = err;
    poke();
  });
  ws.on('close', () => {
    ended ??= null;
    poke();
  });
  const onAbort = (): void => ws.close();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      while (queue.length) yield queue.shift()!;
      if (ended !== undefined) {
        if (ended && !signal?.aborted) throw ended;
        return;
      }
      await new Promise<void>((r) => (wake = r));
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    ws.close();
  }
}

/** Connects to this user's Sandbox Desk service (started on demand) and returns the SDK over it. */
export async function connect(opts: ConnectOptions = {}): Promise<Desk> {
  return createDesk(await connectService(opts));
}
