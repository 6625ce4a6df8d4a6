import { ENTER_FUNCTION, FRAME_PATH_FUNCTION } from './wrapper-script.js';

/**
 * The bash side of a terminal attached to its session (issue 34 item 3): the person's interactive
 * shell is the session's shell, and the agent's commands are delivered to it while it waits at its
 * prompt. Three pieces:
 *
 * - ATTACH_PRELUDE runs in the terminal's `bash -c` before `exec bash -l`: it makes a private 0700
 *   directory (named with the terminal's nonce; `mkdir` fails rather than reuse one that exists) holding three FIFOs — q (requests), o (stdout + end frames), e (stderr + start,
 *   ready and stderr-complete frames) — and the rc below, and reports the directory with the terminal's
 *   OSC 7 tag (`dir:<path>`).
 * - ATTACH_RC is sourced by the login shell at its first prompt (PROMPT_COMMAND, after the login files):
 *   it opens the FIFOs and binds ATTACH_TRIGGER to a macro of three keys: `__sd_agent` (`bind -x`:
 *   readline runs it in the current shell) sets the person's partly typed line aside and runs the
 *   command; an empty `accept-line` gives a new prompt (PS1 expanded again, so it shows where the
 *   command left the shell; PROMPT_COMMAND reports that cwd); `__sd_restore` puts the person's line
 *   back (a macro's keys outlive the accept). It also marks the prompt: PS1 starts
 *   with `idle:` (printed by readline once the terminal is in its editing mode, so a trigger written
 *   then is read by readline, not echoed) and PS0 with `busy:` (a command line was accepted).
 * - RELAY_SCRIPT runs beside it over a plain `execPrefix({interactive:false})` stream: its stdin goes
 *   into q, o and e come back on its stdout and stderr, so the frames reach the app as the session
 *   shell's do (FrameSplitter + CommandCapture).
 *
 * One request: the app writes `nonce, target, tmpdir, command` (encodeField-escaped, one line each) to
 * q and the trigger keys to the PTY. `__sd_agent` reads the four lines and asks, with an `R` frame,
 * whether the request is still wanted (it may have timed out while the person held the prompt); the
 * app answers `0` (dropped) or `1`/`w` (run; `w`: a workdir command, after which the shell goes back
 * where it was unless the command moved) followed by the nonce once more. As in the session shell's
 * wrapper, that copy stays unread in q while the command runs and the variable holding the nonce is
 * unset before it: `set`, `env`, `$_` show no nonce, and frames the command prints are only data.
 * The command runs in the current shell (`cd`, `export`, functions persist — one shell), stdin from
 * /dev/null, stdout/stderr into o/e; the app shows them in the terminal itself, after the `run:` mark
 * this function prints (so they land after readline cleared the line and before it redraws it).
 *
 * Frames are those of wrapper-script.ts (S, B, E, X with the nonce on both sides; paths percent-encoded by
 * the same __sd_frame_path) plus `N:R:N`.
 */

/** The macro's key: a sequence no keyboard sends (PageUp with a modifier number no terminal uses). */
export const ATTACH_TRIGGER = '\x1b[5;37~';

/** The trigger as readline's `bind` spells it. */
const TRIGGER_KEYSEQ = '\\e[5;37~';

export const ATTACH_RC = `${ENTER_FUNCTION}${FRAME_PATH_FUNCTION}
__sd_dir=$SDESK_ATTACH_DIR
builtin export -n SDESK_ATTACH_DIR
builtin unset SDESK_ATTACH_DIR
builtin exec {__sd_rq}<>"$__sd_dir/q" {__sd_ro}<>"$__sd_dir/o" {__sd_re}<>"$__sd_dir/e"
__sd_marks() {
  # Readline prints all of PS1 once it reads the keyboard, so the mark may lead it (the prompt still ends
  # as the person's PS1 does); PS0's mark ends with a CR (the cursor is at column 0 already after Enter),
  # so the command's output still starts a line as it did.
  local i='\\[\\e]7;file://'"$SDESK_OSC7_TAG"'idle:\\a\\]' b='\\e]7;file://'"$SDESK_OSC7_TAG"'busy:\\a\\r'
  [[ $PS1 == *"$i"* ]] || PS1=$i$PS1
  [[ $PS0 == *"$b"* ]] || PS0+=$b
}
__sd_aend() {
  local n cwd st=ok was=$PWD old=$OLDPWD
  IFS= builtin read -r -u "$__sd_rq" n || n=
  if builtin cd -Pe . 2>/dev/null; then cwd=$PWD
  elif cwd=$(builtin pwd -P 2>/dev/null) && [[ $cwd == /* ]]; then PWD=$cwd
  else cwd=$was; PWD=$was; st=gone; fi
  OLDPWD=$old
  [[ \${#cwd} -ge 4096 || -d $cwd ]] || st=gone
  __sd_frame_path "$cwd"
  builtin printf '%s:E:%s:%s:%s:%s\\n' "$n" "$1" "$st" "$__sd_fp" "$n" >&"$__sd_ro"
  builtin printf '%s:X:%s\\n' "$n" "$n" >&"$__sd_re"
  [[ $2 == w && $cwd == "$__sd_used" ]] && builtin cd -P -- "$__sd_prev" 2>/dev/null
  builtin unset __sd_t __sd_tmp __sd_c __sd_go __sd_used __sd_why __sd_prev __sd_fp
  return 0
}
__sd_agent() {
  __sd_line=$READLINE_LINE __sd_point=$READLINE_POINT
  READLINE_LINE= READLINE_POINT=0
  __sd_agent_run
}
__sd_restore() {
  READLINE_LINE=$__sd_line READLINE_POINT=$__sd_point
  builtin unset __sd_line __sd_point
}
__sd_agent_run() {
  IFS= builtin read -r -t 2 -u "$__sd_rq" __sd_n && IFS= builtin read -r -u "$__sd_rq" __sd_t &&
    IFS= builtin read -r -u "$__sd_rq" __sd_tmp && IFS= builtin read -r -u "$__sd_rq" __sd_c || return 0
  builtin printf '%s:R:%s\\n' "$__sd_n" "$__sd_n" >&"$__sd_re"
  # The app answers at once; a request that was not the app's (its R matched nothing) is dropped after 10 s.
  IFS= builtin read -r -t 10 -u "$__sd_rq" __sd_go || __sd_go=0
  if [[ $__sd_go != 1 && $__sd_go != w ]]; then builtin unset __sd_n __sd_t __sd_tmp __sd_c __sd_go; return 0; fi
  builtin printf -v __sd_t '%b' "$__sd_t"; builtin printf -v __sd_tmp '%b' "$__sd_tmp"; builtin printf -v __sd_c '%b' "$__sd_c"
  builtin printf '\\033]7;file://%srun:\\007' "$SDESK_OSC7_TAG"
  __sd_prev=$PWD
  __sd_enter "$__sd_t" "$__sd_tmp"
  __sd_frame_path "$__sd_used"
  builtin printf '%s:S:%s:%s:%s:%s\\n' "$__sd_n" "$$" "$__sd_why" "$__sd_fp" "$__sd_n" >&"$__sd_re"
  builtin printf '%s:B:%s\\n' "$__sd_n" "$__sd_n" >&"$__sd_ro"
  builtin unset __sd_n
  # Bash reports a finished background job ("[1]+ Done …") on its stderr at its next command: said to the
  # terminal here, before the command's redirections, it is never the command's stderr.
  builtin jobs -n
  eval "$__sd_c" </dev/null >&"$__sd_ro" 2>&"$__sd_re"
  __sd_aend $? "$__sd_go"
}
builtin bind -x '"\\e[5;38~": __sd_agent'
builtin bind '"\\e[5;39~": accept-line'
builtin bind -x '"\\e[5;40~": __sd_restore'
builtin bind '"${TRIGGER_KEYSEQ}": "\\e[5;38~\\e[5;39~\\e[5;40~"'
`;

/**
 * Runs in the terminal's \`bash -c\` (TERMINAL_SCRIPT) before the login shell: $2 is the temp dir, $3 the
 * terminal's nonce, $4 ATTACH_RC. Two processes (mkdir, mkfifo): every terminal starts through it. On any
 * failure the terminal still opens, unattached (no \`dir:\` report: the app then keeps the session's own shell).
 */
export const ATTACH_PRELUDE = `
__sd_dir=\${2:-/tmp}/.sdesk-attach-$3
if mkdir -m 700 -- "$__sd_dir" 2>/dev/null && mkfifo -m 600 "$__sd_dir/q" "$__sd_dir/o" "$__sd_dir/e" 2>/dev/null &&
  builtin printf '%s' "$4" > "$__sd_dir/rc"; then
  export SDESK_ATTACH_DIR=$__sd_dir
  builtin printf '\\033]7;file://%sdir:%s\\007' "$SDESK_OSC7_TAG" "$__sd_dir"
fi
unset __sd_dir
`;

/**
 * The prompt hook of every terminal: at the first prompt of the attached shell it sources the rc; each
 * prompt reports the cwd; only the attached shell (it holds __sd_rq, which is not exported) marks its
 * prompt — a nested \`bash\` inherits the hook but strips marks an exported PS1 would carry.
 */
export const PROMPT_HOOK = `__sdesk_osc7() {
  [[ -n \${SDESK_ATTACH_DIR-} && -z \${__sd_rq-} && -r $SDESK_ATTACH_DIR/rc ]] && builtin source "$SDESK_ATTACH_DIR/rc"
  builtin printf '\\033]7;file://%s%s\\007' "$SDESK_OSC7_TAG" "$(builtin pwd -P 2>/dev/null)"
  if [[ -n \${__sd_rq-} ]]; then __sd_marks; else PS1=\${PS1//'\\[\\e]7;file://'"$SDESK_OSC7_TAG"'idle:\\a\\]'/}; fi
}`;

/**
 * bash -c RELAY_SCRIPT sandbox-desk <boot nonce> <dir>: joins the app's stream to the attached shell's
 * FIFOs; ends (and removes the directory) when the app closes its stdin.
 */
export const RELAY_SCRIPT = `
d=$2
[[ -d $d && -O $d && -p $d/q && -p $d/o && -p $d/e ]] || { builtin printf 'sandbox-desk: no attach channel at %s\\n' "$d" >&2; exit 3; }
exec 3<>"$d/q" 4<>"$d/o" 5<>"$d/e"
cat <&4 & o=$!
cat <&5 >&2 & e=$!
builtin printf '%s:H:%s:%s\\n' "$1" "$$" "$1"
cat >&3
kill "$o" "$e" 2>/dev/null
rm -rf -- "$d"
`;
