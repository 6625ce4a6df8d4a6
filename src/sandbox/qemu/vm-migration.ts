/**
 * A VM's memory (and device state) saved to a file and loaded back, through QEMU's migration: the
 * source migrates "to" `exec:cat > FILE`, a new QEMU started with `-incoming defer` reads it back with
 * `exec:cat FILE`. QEMU 7.2 (Debian bookworm) has no `file:` URI yet, so the exec form is the portable
 * one; its one shell word is the path, quoted with shellQuote. The VM is paused (`stop`) while it saves,
 * so memory and the disk copied beside it are the same instant, and nothing is "dirtied" during the copy.
 */
import { SandboxDeskError } from '../../shared/errors.js';
import type { ProgressEvent } from '../provider.js';
import { shellQuote } from '../shell-quote.js';
import { qmpCommand } from './qmp-client.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const MiB = 2 ** 20;

/** What `query-migrate` answers (the parts we read). */
export interface MigrateInfo {
  status?: string;
  ram?: { transferred?: number; total?: number; remaining?: number };
  'error-desc'?: string;
}

/** "saved 312/1024 MiB" from a query-migrate answer; null before RAM numbers exist. */
export function migrationProgress(info: MigrateInfo, verb = 'saved'): string | null {
  const total = info.ram?.total;
  if (!total) return null;
  const done = Math.min(total, info.ram?.transferred ?? total - (info.ram?.remaining ?? total));
  return `${verb} ${Math.round(done / MiB)}/${Math.round(total / MiB)} MiB of guest memory`;
}

/** The guest's run state (`query-status`): running, paused, postmigrate, inmigrate, … */
export async function vmRunState(qmpSocket: string, timeoutMs = 2_000): Promise<string> {
  const r = (await qmpCommand(qmpSocket, 'query-status', undefined, timeoutMs)) as { status?: string };
  return r.status ?? 'unknown';
}

/** States in which the guest's CPUs do not run: what `status()` reports as `paused`. */
export const PAUSED_STATES = new Set(['paused', 'postmigrate', 'prelaunch', 'finish-migrate', 'save-vm', 'restore-vm', 'inmigrate']);

export interface SaveInput {
  qmpSocket: string;
  file: string;
  /**
   * The guest RAM is a shared file mapping (qemu-argv.ts memoryFile) copied beside the state: QEMU's
   * x-ignore-shared leaves it out of the stream, which then holds the devices' state only.
   */
  ignoreShared?: boolean;
  progress: (e: ProgressEvent) => void;
  signal?: AbortSignal | undefined;
}

/**
 * Saves a *paused* VM's state to `file`. Resolves when QEMU reports the migration completed; throws
 * (having cancelled it) when it failed, e.g. the disk is full, or when the signal aborts. The caller
 * resumes the VM either way (`cont` also takes the disks back, which a completed migration releases).
 */
export async function saveVmState(input: SaveInput): Promise<void> {
  // Default bandwidth is throttled for live migrations over a network; a local file wants all of it.
  await qmpCommand(input.qmpSocket, 'migrate-set-parameters', { 'max-bandwidth': 64 * 1024 * MiB });
  // Said either way: a VM restored from a template had it set for its own load, and a stream saved with
  // it has another format (each RAM block's address) that an ordinary restore cannot read.
  await setIgnoreShared(input.qmpSocket, input.ignoreShared === true);
  await qmpCommand(input.qmpSocket, 'migrate', { uri: `exec:cat > ${shellQuote(input.file)}` });
  let lastReport = '';
  for (;;) {
    if (input.signal?.aborted) {
      await qmpCommand(input.qmpSocket, 'migrate_cancel').catch(() => undefined);
      await waitNotActive(input.qmpSocket);
      throw new SandboxDeskError('cancelled', 'the checkpoint was cancelled while saving the memory');
    }
    const info = (await qmpCommand(input.qmpSocket, 'query-migrate', undefined, 10_000)) as MigrateInfo;
    if (info.status === 'completed') {
      const line = migrationProgress(info);
      if (line) input.progress({ step: 'memory', message: line });
      return;
    }
    if (info.status === 'failed' || info.status === 'cancelled') {
      throw new SandboxDeskError('backend_unavailable', `saving the VM's memory failed: ${info['error-desc'] ?? info.status}`, {
        hint: 'check the free space where the checkpoint is written (df); the VM keeps running',
      });
    }
    const line = migrationProgress(info);
    if (line && line !== lastReport) {
      input.progress({ step: 'memory', message: line });
      lastReport = line;
    }
    await sleep(250);
  }
}

async function waitNotActive(qmpSocket: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const info = (await qmpCommand(qmpSocket, 'query-migrate').catch(() => ({}))) as MigrateInfo;
    if (!info.status || !['setup', 'active', 'cancelling', 'device', 'pre-switchover'].includes(info.status)) return;
    await sleep(250);
  }
}

export interface LoadInput {
  qmpSocket: string;
  file: string;
  progress: (e: ProgressEvent) => void;
  /** ms since epoch */
  deadline: number;
  signal?: AbortSignal | undefined;
  /** Whether the QEMU process is still alive (a bad state file makes it exit). */
  alive: () => boolean;
  /**
   * The state was saved with x-ignore-shared (its RAM is a file the new QEMU maps): the stream's format
   * says so, and the loading side must read it the same way.
   */
  ignoreShared?: boolean;
}

/**
 * Feeds `file` to a QEMU waiting with `-incoming defer` and waits until the state is loaded (the guest
 * is then paused, as it was saved); the caller `cont`s it.
 */
export async function loadVmState(input: LoadInput): Promise<void> {
  if (input.ignoreShared) await setIgnoreShared(input.qmpSocket, true);
  await qmpCommand(input.qmpSocket, 'migrate-incoming', { uri: `exec:cat ${shellQuote(input.file)}` });
  input.progress({ step: 'memory', message: 'loading the saved memory' });
  for (;;) {
    if (input.signal?.aborted) throw new SandboxDeskError('cancelled', 'cancelled while loading the saved memory');
    if (!input.alive()) {
      throw new SandboxDeskError('boot_failed', `QEMU exited while loading the saved memory from ${input.file}`, {
        hint: 'the checkpoint may be damaged (verify it), or the VM was made with other devices than the checkpoint',
      });
    }
    if (Date.now() > input.deadline) throw new SandboxDeskError('boot_failed', `the saved memory did not load in time (${input.file})`);
    const state = await vmRunState(input.qmpSocket, 5_000).catch(() => 'unknown');
    if (state !== 'inmigrate' && state !== 'unknown') {
      const info = (await qmpCommand(input.qmpSocket, 'query-migrate').catch(() => ({}))) as MigrateInfo;
      if (info.status === 'failed') {
        throw new SandboxDeskError('boot_failed', `loading the saved memory failed: ${info['error-desc'] ?? 'no reason given'}`);
      }
      // Off again: this VM's own checkpoints later are ordinary streams.
      if (input.ignoreShared) await setIgnoreShared(input.qmpSocket, false);
      return;
    }
    await sleep(100);
  }
}

/** QEMU's (experimental, in 7.2) capability: shared RAM blocks are not sent; both sides must agree. */
async function setIgnoreShared(qmpSocket: string, state: boolean): Promise<void> {
  await qmpCommand(qmpSocket, 'migrate-set-capabilities', { capabilities: [{ capability: 'x-ignore-shared', state }] });
}
