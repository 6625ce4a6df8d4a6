/**
 * A long command's progress on stderr: on a terminal one line rewritten in place (`\r`, then erase
 * to the end of the line), so a minute-long export is one line, not sixty; into a file or a pipe
 * (CI logs, `2> log`) a line per change, since a `\r` there is noise. done() ends the in-place line
 * so what is printed next starts on a fresh one.
 */
export interface ProgressLine {
  update(line: string): void;
  done(): void;
}

export function progressLine(write: (s: string) => void, isTTY: boolean): ProgressLine {
  let last = '';
  let open = false;
  return {
    update(line) {
      if (line === last) return;
      last = line;
      if (!isTTY) return write(`${line}\n`);
      write(`\r${line}\x1b[K`);
      open = true;
    },
    done() {
      if (open) write('\n');
      open = false;
    },
  };
}
