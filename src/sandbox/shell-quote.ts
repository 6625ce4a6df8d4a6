/**
 * Quotes one word for a POSIX shell. Needed only where a transport joins argv words into one remote
 * command line (ssh); everywhere else words travel as separate argv entries.
 */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The words after an exec prefix: separate entries, or one quoted line for transports that join them. */
export function argvAfterPrefix(words: string[], joinsArgv: boolean | undefined): string[] {
  return joinsArgv ? [words.map(shellQuote).join(' ')] : words;
}
