/**
 * The bash that runs around every command, in both modes. It is a constant: the command, the target
 * directory and the nonce travel as positional arguments (one-shot) or as escaped request lines
 * (session shell) — never spliced into the script text.
 *
 * Frames it prints (N is a per-command random nonce the command cannot know, so it cannot forge one):
 *   stderr  N:S:<pid>:<why>:<used dir>:N\n   before the command: where it starts and why
 *   stdout  N:E:<exit>:<ok|gone>:<pwd -P>:N\n after the command (also from the EXIT trap on `exit`)
 *   stderr  N:X:N\n                           stderr of this command is complete
 *   stdout  B:H:<pid>:B\n                     session shell is up (B = boot nonce)
 * <why> is ok | missing | denied | notdir | unenterable.
 */

/**
 * Enters $1 as the current user, or walks to its nearest enterable ancestor, else $2 (the temp dir).
 * Sets __sd_used (where it stands) and __sd_why (ok | missing | denied | notdir | unenterable). The
 * `cd` is the enterability test: it is done as the sandbox user, so a 0700 directory of another user
 * is not entered even though it exists.
 */
export const ENTER_FUNCTION = `
__sd_enter() {
  __sd_used= __sd_why=ok
  if [ -n "$1" ] && builtin cd -P -- "$1" 2>/dev/null; then __sd_used=$1; return; fi
  local p=$1 child=$1
  while [ -n "$p" ] && [ "$p" != / ]; do
    child=$p; p=\${p%/*}; [ -z "$p" ] && p=/
    if builtin cd -P -- "$p" 2>/dev/null; then __sd_used=$p; break; fi
  done
  if [ -z "$__sd_used" ]; then
    if builtin cd -P -- "$2" 2>/dev/null; then __sd_used=$2; else __sd_used=$PWD; __sd_why=unenterable; return; fi
  fi
  if [ -d "$child" ]; then __sd_why=denied; elif [ -e "$child" ]; then __sd_why=notdir; else __sd_why=missing; fi
}
`;

const COMMON = `
${ENTER_FUNCTION}__sd_end() {
  [ -n "$__sd_n" ] || return 0
  local cwd st=ok was=$PWD old=$OLDPWD
  # cd -Pe . measures the physical cwd without forking; it fails when the directory was deleted.
  if builtin cd -Pe . 2>/dev/null; then cwd=$PWD; else cwd=$was; PWD=$was; st=gone; fi
  OLDPWD=$old
  [ -d "$cwd" ] || st=gone
  builtin printf '%s:E:%s:%s:%s:%s\\n' "$__sd_n" "$1" "$st" "$cwd" "$__sd_n" >&7
  builtin printf '%s:X:%s\\n' "$__sd_n" "$__sd_n" >&8
  __sd_n=
}
__sd_start() {
  __sd_enter "$1" "$2"
  builtin printf '%s:S:%s:%s:%s:%s\\n' "$__sd_n" "$$" "$__sd_why" "$__sd_used" "$__sd_n" >&8
}
exec 7>&1 8>&2
trap '__sd_end $?' EXIT
`;

/**
 * The loop both modes share, so a command sees the same shell in both — down to the line numbers in
 * bash's own error messages ("sandbox-desk: line 47: cd: …"). Each mode adds exactly two lines before
 * it: a prelude and a one-line `__sd_next` that fetches the next request. Positional parameters are
 * cleared before the command runs, so it never sees the nonce.
 */
const LOOP = `
while __sd_next "$@"; do
  exec 1>&7 2>&8
  __sd_start "$__sd_t" "$__sd_tmp"
  set --
  eval "$__sd_c" </dev/null 7>&- 8>&-
  __sd_end $?
done
`;

/** bash -c ONESHOT_SCRIPT sandbox-desk <nonce> <target> <tmpdir> <command> */
export const ONESHOT_SCRIPT =
  COMMON +
  `:
__sd_next() { [ -z "\${__sd_done:-}" ] || return 1; __sd_done=1; __sd_n=$1 __sd_t=$2 __sd_tmp=$3 __sd_c=$4; }` +
  LOOP;

/**
 * bash -c SHELL_SCRIPT sandbox-desk <boot nonce>; then one request per command on stdin, four lines:
 * nonce, target, tmpdir, command — each escaped for printf %b (see encodeRequest).
 */
export const SHELL_SCRIPT =
  COMMON +
  `builtin printf '%s:H:%s:%s\\n' "$1" "$$" "$1" >&7
__sd_next() { IFS= builtin read -r __sd_n && IFS= builtin read -r __sd_t && IFS= builtin read -r __sd_tmp && IFS= builtin read -r __sd_c || return 1; builtin printf -v __sd_t '%b' "$__sd_t"; builtin printf -v __sd_tmp '%b' "$__sd_tmp"; builtin printf -v __sd_c '%b' "$__sd_c"; }` +
  LOOP;

/**
 * bash -c KILL_TREE_SCRIPT sandbox-desk <pid> <1: include pid itself | 0: only its descendants>
 * Walks /proc (no procps needed), TERMs the tree, then KILLs what is left after a short grace.
 */
export const KILL_TREE_SCRIPT = `
root=$1 incl=$2
declare -A kids
for f in /proc/[0-9]*/stat; do
  IFS= read -r line < "$f" 2>/dev/null || continue
  pid=\${f#/proc/}; pid=\${pid%/stat}
  rest=\${line##*) }
  read -r _state ppid _ <<< "$rest"
  kids[$ppid]+=" $pid"
done
list=() queue=("$root")
while [ \${#queue[@]} -gt 0 ]; do
  p=\${queue[0]}; queue=("\${queue[@]:1}")
  for c in \${kids[$p]}; do [ "$c" = "$$" ] && continue; list+=("$c"); queue+=("$c"); done
done
[ "$incl" = 1 ] && list+=("$root")
[ \${#list[@]} -eq 0 ] && exit 0
kill -TERM "\${list[@]}" 2>/dev/null
for _ in 1 2 3 4 5; do
  alive=()
  for p in "\${list[@]}"; do [ -e "/proc/$p" ] && alive+=("$p"); done
  [ \${#alive[@]} -eq 0 ] && exit 0
  sleep 0.1
done
kill -KILL "\${alive[@]}" 2>/dev/null
exit 0
`;

/** Escapes one request field so it fits on one line and `printf %b` restores it exactly. */
export function encodeField(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export function encodeRequest(nonce: string, target: string, tmpDir: string, command: string): string {
  return [nonce, target, tmpDir, command].map(encodeField).join('\n') + '\n';
}
