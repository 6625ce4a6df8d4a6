import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { IDisposable } from '../shared/lifecycle.js';

/**
 * `tail -n` and `tail -F` of a host file (a VM's serial console, virtiofsd's log, the app's own log),
 * written here rather than taken from a package: the few on npm watch with inotify only (which misses
 * writes on some filesystems) or keep the whole file in memory; this reads only the end and polls.
 */

/** The last `lines` lines of a file, reading at most `maxBytes` from its end. Throws when it cannot be read. */
export function readTail(path: string, lines: number, maxBytes = 1024 * 1024): string {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const start = Math.max(0, size - maxBytes);
    const buf = Buffer.alloc(size - start);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, start + got);
      if (n === 0) break;
      got += n;
    }
    return lastLines(buf.subarray(0, got).toString('utf8'), lines, start > 0);
  } finally {
    closeSync(fd);
  }
}

/** The last `n` lines of text; `cut`: the text starts mid-file, so its first (partial) line is dropped. */
export function lastLines(text: string, n: number, cut = false): string {
  let parts = text.split('\n');
  if (cut && parts.length > 1) parts = parts.slice(1);
  // A final newline ends the last line; it does not start an empty one.
  const trailing = parts.length > 0 && parts[parts.length - 1] === '';
  if (trailing) parts.pop();
  const kept = n <= 0 ? [] : parts.slice(-n);
  return kept.length === 0 ? '' : kept.join('\n') + (trailing ? '\n' : '');
}

export interface FollowOptions {
  /** Lines of what is already there to send first. */
  tail: number;
  /** How often the file is looked at (ms). */
  intervalMs?: number;
  /** At most this many bytes are read per look, so a file growing fast cannot flood memory. */
  chunkBytes?: number;
}

/**
 * Sends the file's last lines, then what is appended, until disposed. A file that shrinks or is replaced
 * (rotated, recreated by a new boot) is read again from its start; one that does not exist yet is waited for.
 */
export function followFile(path: string, opts: FollowOptions, onData: (text: string) => void): IDisposable {
  const interval = opts.intervalMs ?? 250;
  const chunk = opts.chunkBytes ?? 256 * 1024;
  let offset = 0;
  let ino = -1;
  let decoder = new StringDecoder('utf8');
  let stopped = false;
  try {
    const st = statSync(path);
    const head = readTail(path, opts.tail);
    if (head) onData(head);
    offset = st.size;
    ino = st.ino;
  } catch {
    // Not there yet: everything it gets is new.
  }
  const look = (): void => {
    if (stopped) return;
    let st;
    try {
      st = statSync(path);
    } catch {
      return;
    }
    if (st.ino !== ino || st.size < offset) {
      ino = st.ino;
      offset = 0;
      decoder = new StringDecoder('utf8');
    }
    if (st.size <= offset) return;
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return;
    }
    try {
      const buf = Buffer.alloc(Math.min(chunk, st.size - offset));
      const n = readSync(fd, buf, 0, buf.length, offset);
      offset += n;
      const text = decoder.write(buf.subarray(0, n));
      if (text) onData(text);
    } finally {
      closeSync(fd);
    }
  };
  const timer = setInterval(look, interval);
  return {
    dispose: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
