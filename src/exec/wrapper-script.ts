/**
 * The bash that runs around every command, in both modes. It is a constant: the request (nonce, target
 * directory, temp dir, command) travels on stdin as escaped lines — never in argv, where /proc/<pid>/
 * cmdline would show it, and never spliced into the script text.
 *
 * Frames it prints (N is a per-command random nonce the command cannot know, so it cannot forge one):
 *   stderr  N:S:<pid>:<why>:<used dir>:N\n   before the command: where it starts and why
 *   stdout  N:E:<exit>:<ok|gone>:<pwd -P>:N\n after the command (also from the EXIT trap on `exit`)
 *   stdout  N:B:N\n                           before the command: its stdout begins here
 *   stderr  N:X:N\n                           stderr of this command is complete
 *   stdout  B:H:<pid>:B\n                     session shell is up (B = boot nonce)
 * <why> is ok | missing | denied | notdir | unenterable. The two directories are percent-encoded
 * (`%` → %25, newline → %0A, carriage return → %0D; every other byte as it is): a directory name may
 * hold any byte but NUL and `/`, and a newline in it would cut the one-line frame (decodeFramePath).
 *
 * Keeping the nonce from the command: the wrapper reads it for the S frame and unsets it before the
 * command runs; the copy for the end frames is the request's last line, still unread in the wrapper's
 * stdin while the command runs with stdin from /dev/null. So `set`, `declare -p`, `env`, `$_` and
 * the positional parameters show no nonce, and a command that prints frame-shaped text only prints data.
 */

/**
 * `cd -P` that also enters paths longer than PATH_MAX (chdir(2) refuses those with ENAMETOOLONG) by
 * walking them a component at a time. Only absolute paths are walked: anything else is a plain cd.
 */
const CD_FUNCTION = `
__sd_cd() {
  builtin cd -P -- "$1" 2>/dev/null && return 0
  [[ \${#1} -ge 4096 && $1 == /* ]] || return 1
  local __sd_here=$PWD __sd_part __sd_parts
  IFS=/ builtin read -r -a __sd_parts <<< "\${1#/}"
  builtin cd -P / 2>/dev/null || return 1
  for __sd_part in "\${__sd_parts[@]}"; do
    [[ -z $__sd_part ]] && continue
    builtin cd -P -- "$__sd_part" 2>/dev/null || { builtin cd -P -- "$__sd_here" 2>/dev/null; return 1; }
  done
}
`;

/**
 * Enters $1 as the current user, or walks to its nearest enterable ancestor, else $2 (the temp dir).
 * Sets __sd_used (where it stands) and __sd_why (ok | missing | denied | notdir | unenterable). The
 * `cd` is the enterability test: it is done as the sandbox user, so a 0700 directory of another user
 * is not entered even though it exists. The walk ends for any input: each step removes at least the
 * last `/`, and a path with no `/` left (a relative or Windows-shaped one) stops it at once.
 */
export const ENTER_FUNCTION = `${CD_FUNCTION}
__sd_enter() {
  __sd_used= __sd_why=ok
  if [[ -n $1 ]] && __sd_cd "$1"; then __sd_used=$1; return; fi
  local p=$1 child=$1
  while [[ -n $p && $p != / && $p == */* ]]; do
    child=$p; p=\${p%/*}; [[ -z $p ]] && p=/
    if __sd_cd "$p"; then __sd_used=$p; break; fi
  done
  if [[ -z $__sd_used ]]; then
    if __sd_cd "$2"; then __sd_used=$2; else __sd_used=$PWD; __sd_why=unenterable; return; fi
  fi
  if [[ $child != /* ]]; then __sd_why=missing; elif [[ -d $child ]]; then __sd_why=denied; elif [[ -e $child ]]; then __sd_why=notdir; else __sd_why=missing; fi
}
`;

/**
 * A path as a frame field: \`%\`, LF and CR percent-encoded, so no byte of a directory's name can end or
 * split a frame (frame-splitter.ts decodes it). Shared with the attached terminal's rc (attach-scripts.ts).
 */
export const FRAME_PATH_FUNCTION = `__sd_frame_path() {
  # Bytewise (C locale: a name need not be valid UTF-8), without forking: the frame stays one line.
  local LC_ALL=C
  __sd_fp=\${1//\\%/%25}; __sd_fp=\${__sd_fp//$'\\n'/%0A}; __sd_fp=\${__sd_fp//$'\\r'/%0D}
}
`;

const COMMON = `
${ENTER_FUNCTION}${FRAME_PATH_FUNCTION}__sd_end() {
  # From the loop ($2 = done) always; from the EXIT trap only while a command runs.
  [[ $2 == done || -n \${__sd_run:-} ]] || return 0
  __sd_run=
  local n cwd st=ok was=$PWD old=$OLDPWD
  # The nonce for the end frames is the request's last line, read only now that the command is over.
  IFS= builtin read -r n || n=
  # cd -Pe . measures the physical cwd without forking; it fails when the directory was deleted, and
  # for a cwd past PATH_MAX, which getcwd(3) (pwd -P, in a subshell: rare) still measures.
  if builtin cd -Pe . 2>/dev/null; then cwd=$PWD
  elif cwd=$(builtin pwd -P 2>/dev/null) && [[ $cwd == /* ]]; then PWD=$cwd
  else cwd=$was; PWD=$was; st=gone; fi
  OLDPWD=$old
  # stat(2) refuses paths past PATH_MAX: a deep cwd that cd -Pe just measured exists all the same.
  [[ \${#cwd} -ge 4096 || -d $cwd ]] || st=gone
  __sd_frame_path "$cwd"
  builtin printf '%s:E:%s:%s:%s:%s\\n' "$n" "$1" "$st" "$__sd_fp" "$n" >&7
  builtin printf '%s:X:%s\\n' "$n" "$n" >&8
}
__sd_start() {
  __sd_enter "$1" "$2"
  __sd_frame_path "$__sd_used"
  builtin printf '%s:S:%s:%s:%s:%s\\n' "$__sd_n" "$$" "$__sd_why" "$__sd_fp" "$__sd_n" >&8
  builtin printf '%s:B:%s\\n' "$__sd_n" "$__sd_n" >&7
}
exec 7>&1 8>&2
trap '__sd_end $?' EXIT
`;

/**
 * The loop both modes share, so a command sees the same shell in both — down to the line numbers in
 * bash's own error messages ("sandbox-desk: line 47: cd: …"). Each mode adds exactly two lines before
 * it: a prelude and the one-line \`__sd_next\` that reads the next request. The nonce is unset and
 * positional parameters cleared before the command runs, and the last word before \`eval\` is not the
 * nonce (bash's \`$_\` would show it).
 */
const LOOP = `
while __sd_next; do
  exec 1>&7 2>&8
  __sd_start "$__sd_t" "$__sd_tmp"
  set --
  __sd_run=1
  unset __sd_n
  eval "$__sd_c" </dev/null 7>&- 8>&-
  __sd_end $? done
done
`;

/** Reads one request (see encodeRequest) from stdin: the nonce for the start frame, target, tmpdir, command. */
const NEXT = `__sd_next() { IFS= builtin read -r __sd_n && IFS= builtin read -r __sd_t && IFS= builtin read -r __sd_tmp && IFS= builtin read -r __sd_c || return 1; builtin printf -v __sd_t '%b' "$__sd_t"; builtin printf -v __sd_tmp '%b' "$__sd_tmp"; builtin printf -v __sd_c '%b' "$__sd_c"; }`;

/** bash -c ONESHOT_SCRIPT sandbox-desk; then one request on stdin, and EOF. */
export const ONESHOT_SCRIPT = COMMON + `:\n` + NEXT + LOOP;

/** bash -c SHELL_SCRIPT sandbox-desk <boot nonce>; then one request per command on stdin. */
export const SHELL_SCRIPT = COMMON + `builtin printf '%s:H:%s:%s\\n' "$1" "$$" "$1" >&7\n` + NEXT + LOOP;

/**
 * bash -c KILL_TREE_SCRIPT sandbox-desk <pid> <1: include pid itself | 0: only its descendants>
 * Walks /proc (no procps needed), TERMs the tree, then KILLs what is left after a short grace. A
 * process can fork between a walk and a signal, so before each signal the tree is frozen: SIGSTOP
 * what the walk found and walk again until nothing new appears (a stopped process cannot fork); and it
 * is walked afresh before the KILL, which catches children forked during the grace.
 */
export const KILL_TREE_SCRIPT = `
root=$1 incl=$2
walk() {
  local f line pid rest ppid p c queue
  local -A kids=()
  for f in /proc/[0-9]*/stat; do
    IFS= read -r line < "$f" 2>/dev/null || continue
    pid=\${f#/proc/}; pid=\${pid%/stat}
    rest=\${line##*) }
    read -r _ ppid _ <<< "$rest"
    kids[$ppid]+=" $pid"
  done
  list=() queue=("$root")
  while [ \${#queue[@]} -gt 0 ]; do
    p=\${queue[0]}; queue=("\${queue[@]:1}")
    for c in \${kids[$p]}; do [ "$c" = "$$" ] && continue; list+=("$c"); queue+=("$c"); done
  done
  [ "$incl" = 1 ] && [ -e "/proc/$root" ] && list+=("$root")
}
freeze() {
  local n
  walk
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ \${#list[@]} -eq 0 ] && return
    n=\${#list[@]}
    kill -STOP "\${list[@]}" 2>/dev/null
    walk
    [ \${#list[@]} -le "$n" ] && return
  done
}
freeze
[ \${#list[@]} -eq 0 ] && exit 0
kill -TERM "\${list[@]}" 2>/dev/null
kill -CONT "\${list[@]}" 2>/dev/null
for _ in 1 2 3 4 5; do
  alive=()
  for p in "\${list[@]}"; do [ -e "/proc/$p" ] && alive+=("$p"); done
  [ \${#alive[@]} -eq 0 ] && break
  sleep 0.1
done
freeze
[ \${#list[@]} -eq 0 ] && exit 0
kill -KILL "\${list[@]}" 2>/dev/null
exit 0
`;

/** Escapes one request field so it fits on one line and `printf %b` restores it exactly. */
export function encodeField(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/**
 * One request, five lines: nonce, target, tmpdir, command, and the nonce once more — the copy the
 * wrapper reads only after the command has ended, for the end frames.
 */
export function encodeRequest(nonce: string, target: string, tmpDir: string, command: string): string {
  return [nonce, target, tmpDir, command, nonce].map(encodeField).join('\n') + '\n';
}
