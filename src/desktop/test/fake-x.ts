import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SandboxEnvironment } from '../../sandbox/provider.js';
import { desktopLayout, type DesktopLayout } from '../desktop-runtime.js';
import { folderSandbox } from './folder-sandbox.js';

/**
 * An X server's cookie handling, faked in `dir` for the desktop template's re-key and hand-over
 * scripts: xauth (entries as "host/unix:N MIT-MAGIC-COOKIE-1 hex" lines; `generate` asks the "server"
 * for a new cookie) and xdpyinfo (accepted when the file's entry for this host is one the server
 * accepts). The server's accepted cookies are the file `server`. The desktop folder of sandbox `copy`
 * (display 20) is made.
 */
export function fakeXServer(dir: string, hostname: string): { env: SandboxEnvironment; layout: DesktopLayout; server: string } {
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const server = join(dir, 'server-cookies');
  const script = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/bash\nHOST=${hostname}\nSERVER=${server}\n${body}`);
    chmodSync(join(bin, name), 0o755);
  };
  script(
    'xauth',
    `file=$XAUTHORITY
[ "$1" = -q ] && shift
[ "$1" = -f ] && { file=$2; shift 2; }
[ "$1" = -q ] && shift
touch "$file"
entry() { case "$1" in :*) echo "$HOST/unix$1" ;; *) echo "$1" ;; esac; }
case $1 in
  list) if [ -n "\${2:-}" ]; then grep "^$(entry "$2") " "$file"; else cat "$file"; fi ;;
  add) e=$(entry "$2"); grep -v "^$e " "$file" > "$file.t"; echo "$e $3 $4" >> "$file.t"; mv "$file.t" "$file" ;;
  generate) e=$(entry "$2"); grep -q "^$e " "$file" && grep -qxf <(awk '{print $3}' "$file") "$SERVER" || exit 1
    c=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n'); echo "$c" >> "$SERVER"
    grep -v "^$e " "$file" > "$file.t"; echo "$e MIT-MAGIC-COOKIE-1 $c" >> "$file.t"; mv "$file.t" "$file" ;;
esac`,
  );
  script('xdpyinfo', `c=$(grep "^$HOST/unix$DISPLAY " "$XAUTHORITY" | awk '{print $3}'); [ -n "$c" ] && grep -qx "$c" "$SERVER"`);
  const env = folderSandbox(dir, ['env', `PATH=${bin}:${process.env.PATH ?? ''}`]);
  const layout = desktopLayout(env, 'copy', 20);
  mkdirSync(layout.dir, { recursive: true });
  return { env, layout, server };
}
