import { spawnSync } from 'node:child_process';

/**
 * asciinema's own reader of a .cast (Debian's `asciinema`, installed by scripts/setup.sh): the loader
 * `asciinema cat/play` use, its duration, and the output events joined. `asciinema cat` itself wants
 * a /dev/tty, which tests do not have, so its modules are called directly. null when not installed.
 */
const SCRIPT = `
import json, sys
from asciinema import asciicast
from asciinema.asciicast import v2
with asciicast.open_from_url(sys.argv[1]) as a:
    events = list(a.events())
    header = a.v2_header
out = "".join(e[2] for e in events if e[1] == "o")
print(json.dumps({"version": a.version, "header": header, "events": len(events), "duration": v2.get_duration(sys.argv[1]), "output": out}))
`;

export interface AsciinemaReading {
  version: number;
  header: Record<string, unknown>;
  events: number;
  duration: number;
  output: string;
}

/** Debian's Python (the one its asciinema package is for), not a python3 earlier on PATH (pyenv). */
const PYTHON = '/usr/bin/python3';

export const hasAsciinema = spawnSync(PYTHON, ['-c', 'import asciinema'], { stdio: 'ignore' }).status === 0;

export function readWithAsciinema(file: string): AsciinemaReading {
  const r = spawnSync(PYTHON, ['-c', SCRIPT, file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`asciinema could not read ${file}: ${r.stderr}`);
  return JSON.parse(r.stdout) as AsciinemaReading;
}
