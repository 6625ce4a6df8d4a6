import type { Command } from 'commander';
import type { DeskClient } from '../client/http-client.js';
import { printJson, type Out } from './output.js';

/** All of stdin as text, refused once it grows past the cap (a pipe of a huge file must not be buffered whole). */
async function readStdin(maxBytes: number, stdin: NodeJS.ReadableStream = process.stdin): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += b.length;
    if (size > maxBytes) {
      // Loaded only here: the desktop's module pulls in the exec layer, which no other command's start needs.
      const { tooLarge } = await import('../desktop/desktop-clipboard.js');
      throw tooLarge(`more than ${maxBytes}`, maxBytes, 'on stdin');
    }
    parts.push(b);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** `desktop clipboard NAME [--set TEXT|-]`: the desktop's clipboard for agents and scripts (xclip inside). */
export function addClipboardCommand(
  desktop: Command,
  client: () => Promise<DeskClient>,
  out: Out,
  /** config clipboard.maxBytes: stdin is refused past it before anything is sent (the server checks it too). */
  clipboardMaxBytes: () => number,
): void {
  desktop
    .command('clipboard <name>')
    .description("print the desktop's clipboard text, or set it with --set (refused while a human has control)")
    .option('--set <text>', 'the text to put on the clipboard; - reads it from stdin')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: { set?: string; json?: boolean }) => {
      if (o.set === undefined) {
        const { text, bytes } = await (await client()).call('desktopClipboard', { sandbox: name });
        if (o.json) printJson(out, { text, bytes });
        else out.stdout(text);
        return;
      }
      const text = o.set === '-' ? await readStdin(clipboardMaxBytes()) : o.set;
      const { bytes } = await (await client()).call('desktopClipboard', { sandbox: name, text });
      if (o.json) printJson(out, { text, bytes });
      else out.stderr(`clipboard of ${name}: ${bytes} bytes set\n`);
    });
}
