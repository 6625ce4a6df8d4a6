/** pino's numeric levels, as words. */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has (shown as time and level, or noise for a reader). */
const OMIT = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v']);

/**
 * The app's own log (pino JSON lines) as a person reads it: `12:04:05.123 WARN  message  key=value …`
 * (the date kept only when it differs from the line before). A line that is not such JSON — a torn
 * last line while following, another source's text — is kept as it is.
 */
export function readableAppLog(text: string): string {
  let lastDay = '';
  return text
    .split('\n')
    .map((line) => {
      if (!line.startsWith('{')) return line;
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return line;
      }
      if (typeof o !== 'object' || o === null || !('msg' in o || 'level' in o)) return line;
      const iso = typeof o.time === 'string' ? o.time : typeof o.time === 'number' ? new Date(o.time).toISOString() : '';
      const day = iso.slice(0, 10);
      const when = iso ? `${day !== lastDay ? `${day} ` : ''}${iso.slice(11, 23)}` : '';
      lastDay = day || lastDay;
      const level = (typeof o.level === 'number' ? LEVELS[o.level] : typeof o.level === 'string' ? o.level.toUpperCase() : '') ?? '';
      const fields = Object.entries(o)
        .filter(([k]) => !OMIT.has(k))
        .map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`)
        .join(' ');
      return [when, level.padEnd(5), typeof o.msg === 'string' ? o.msg : '', fields].filter(Boolean).join('  ');
    })
    .join('\n');
}
