/**
 * Images as the app shows them (CLI, API, MCP, the window): Docker images the app made or uses, and VM
 * images (named directories with image.json, or disk files a VM boots from). Wire types only.
 */

/** `vm-template`: a VM booted once and saved with its memory, which creates are restored from. */
export type ImageKind = 'docker' | 'vm' | 'vm-template';

export interface ImageInfo {
  kind: ImageKind;
  /** What `--image` takes: a Docker tag (or id when untagged), a VM image name, or a VM disk path. */
  ref: string;
  /** Docker: the image id (sha256:…); VM: null. */
  id: string | null;
  /** Docker: every tag the image has. */
  tags: string[];
  /** Bytes on disk (Docker: the image's size; VM: the files of its directory, or the disk file). */
  sizeBytes: number;
  createdAt: string | null;
  /** The sandboxes whose container or VM uses it (by name). */
  usedBy: string[];
  /**
   * The bot desktop's parts (Xvnc, Xfce, Chromium) are in it: Docker from the app's labels, VM from
   * image.json. null: not known (an image the app did not make).
   */
  desktop: boolean | null;
  /** Why it is listed: made by the app (sandbox-desk/* or labelled), used by a sandbox, or found by name. */
  origin: 'app' | 'used' | 'named';
  /** VM: the directory of a named image, or the disk file; a VM template: its folder; Docker: null. */
  path: string | null;
  /** Docker: the image it was derived from (`--desktop`), when the app made it; a VM template: its image. */
  derivedFrom: string | null;
}

/** One event of a build or pull, in order. `step`: a Dockerfile step or a VM build stage began. */
export interface ImageTaskEvent {
  at: string;
  kind: 'step' | 'output' | 'progress' | 'error' | 'done';
  text: string;
  /** For `step`: its number and the total (1-based). */
  step?: number;
  total?: number;
  /** For `progress` (pull: one layer): its id and bytes so far of its total. */
  layer?: string;
  current?: number;
  layerTotal?: number;
}

/** A build or pull the core runs on behalf of a client, polled by id (the window) or listened to (CLI). */
export interface ImageTask {
  id: string;
  kind: 'build' | 'vm-build' | 'vm-template' | 'pull';
  /** The tag or VM image name being made. */
  target: string;
  startedAt: string;
  /** The most recent events (bounded), oldest first. */
  events: ImageTaskEvent[];
  /** How many events came before the first one kept. */
  dropped: number;
  state: 'running' | 'succeeded' | 'failed' | 'cancelled';
  error: { code: string; message: string; hint?: string } | null;
  /** Succeeded: the image made (Docker id, or the VM image's directory). */
  result: { ref: string; id: string | null } | null;
}
