import type { StreamEncoding } from '../shared/exec-result.js';

/** One stream of a command as JSON carries it: its text, or base64 of its exact bytes. */
export interface StreamText {
  text: string;
  encoding: StreamEncoding;
}

/**
 * A command's stdout or stderr for a JSON answer (CLI --json, the HTTP API, MCP). Valid UTF-8 stays
 * text; anything else is base64 of the exact bytes, never U+FFFD in their place, so an agent can tell
 * `\xff` from `�` and get binary output back whole. A stream cut at the output limit may end inside a
 * character: that cut alone does not turn the text into base64 (the partial character is left out, as
 * the rest past the limit is).
 */
export function streamText(bytes: Buffer, truncated: boolean): StreamText {
  try {
    // ignoreBOM: a leading U+FEFF is the command's, kept; stream: an incomplete last character is held back.
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes, { stream: truncated });
    return { text, encoding: 'utf8' };
  } catch {
    return { text: bytes.toString('base64'), encoding: 'base64' };
  }
}
