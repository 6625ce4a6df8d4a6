import { closeSync, openSync, readSync, statSync } from 'node:fs';

/** Bytes written to the serial log so far (0 when it does not exist yet). */
export function serialSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * The last lines of a VM's serial console, cleaned for quoting in an error: control sequences and
 * carriage returns removed, blank lines dropped.
 */
export function serialTail(path: string, lines = 15, maxBytes = 16_384): string {
  let text = '';
  try {
    const size = statSync(path).size;
    const start = Math.max(0, size - maxBytes);
    const buf = Buffer.alloc(size - start);
    const fd = openSync(path, 'r');
    try {
      readSync(fd, buf, 0, buf.length, start);
    } finally {
      closeSync(fd);
    }
    text = buf.toString('utf8');
  } catch {
    return '(no serial output)';
  }
  const clean = text
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
    .replace(/\r/g, '')
    .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
  const kept = clean
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '');
  return kept.length === 0 ? '(no serial output)' : kept.slice(-lines).join('\n');
}
