/**
 * Text a sandbox chose (a path it reported), made safe to print on a terminal or in one log line:
 * control characters — a newline that would start a line of its own, an escape sequence that would
 * move the cursor or retitle the window — are shown escaped (`\x0a`, `\x1b`), everything else as is.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
