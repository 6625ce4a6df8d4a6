import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { spawnSync as spawnBash } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ONESHOT_SCRIPT, SHELL_SCRIPT, encodeField, encodeRequest } from './wrapper-script.js';

const NONCE = 'sd5e1f0c9a7b3d2e';
const BOOT = 'sdb00700b00700b0';

/** The stdout begin frame (`N:B:N`, before each command) is checked on its own below; the rest of the file reads stdout without it. */
const BEGIN = /^(sd[0-9a-z]+):B:\1\n/gm;
const spawnSync = ((...args: Parameters<typeof spawnBash>) => {
  const r = spawnBash(...args);
  if (typeof r.stdout === 'string') r.stdout = r.stdout.replace(BEGIN, '');
  return r;
}) as typeof spawnBash;

describe('the begin frame', () => {
  it("stdout carries N:B:N before the command's own output, in both modes", () => {
    for (const argv of [
      ['-c', ONESHOT_SCRIPT, 'sd'],
      ['-c', SHELL_SCRIPT, 'sd', BOOT],
    ]) {
      const r = spawnBash('bash', argv, { input: encodeRequest(NONCE, '/tmp', '/tmp', 'echo hi'), encoding: 'utf8' });
      expect(r.stdout).toContain(`${NONCE}:B:${NONCE}\nhi\n${NONCE}:E:0:ok:/tmp:${NONCE}\n`);
    }
  });
});

/**
 * How to run bash as a user that permissions apply to: as is when not root, through setpriv as
 * nobody when root (root enters any directory), or null when neither is possible.
 */
const unprivileged: string[] | null =
  process.getuid?.() !== 0
    ? ['env']
    : existsSync('/usr/bin/setpriv')
      ? ['/usr/bin/setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
      : null;

/** Strings that break naive escaping for `printf %b` or `read`. */
const TRICKY: Array<[string, string]> = [
  ['backslashes', 'a\\b\\\\c'],
  ['literal \\n text', 'line\\nstill one line'],
  ['real newlines', 'one\ntwo\n\nthree'],
  ['a trailing newline', 'x\n'],
  ['printf directives', '%s %d %% %b'],
  ['shell variables', '$HOME ${PATH} $(whoami) `id`'],
  ['quotes', `'single' "double" \\'`],
  ['a hex escape as text', '\\x41\\101\\u0041'],
  ['the \\c stop escape', 'before\\cafter'],
  ['a \\0 escape as text', 'nul\\0here'],
  ['unicode', 'héllo — 日本語 🚀'],
  ['a trailing backslash', 'ends with\\'],
  ['only backslashes', '\\\\\\'],
  ['leading and trailing spaces and tabs', '  \t padded \t '],
  ['a carriage return', 'cr\rhere'],
  ['an empty string', ''],
];

describe('encodeField', () => {
  it('keeps a field on one line', () => {
    for (const [, s] of TRICKY) expect(encodeField(s)).not.toContain('\n');
  });

  it('leaves plain text unchanged', () => {
    expect(encodeField('/home/agent/project')).toBe('/home/agent/project');
  });

  it('escapes backslashes before newlines', () => {
    expect(encodeField('a\\\nb')).toBe('a\\\\\\nb');
  });

  it.each(TRICKY)('round-trips %s through bash read -r and printf %%b', (_label, s) => {
    const r = spawnSync('bash', ['-c', 'IFS= read -r l; printf -v v "%b" "$l"; printf %s "$v"'], {
      input: encodeField(s) + '\n',
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(s);
  });
});

describe('encodeRequest', () => {
  it('produces five lines, one per field and the nonce again, ending in a newline', () => {
    const req = encodeRequest('n', '/t', '/tmp', 'echo a\necho b');
    expect(req.endsWith('\n')).toBe(true);
    expect(req.slice(0, -1).split('\n')).toEqual(['n', '/t', '/tmp', 'echo a\\necho b', 'n']);
  });

  it('round-trips all four fields through bash', () => {
    const fields = ['nonce', '/dir with\\back\nslash', '/tmp', 'printf "%s\\n" "$HOME"\necho \\c'];
    const script = 'for i in 1 2 3 4; do IFS= read -r l; printf -v v "%b" "$l"; printf "%s\\0" "$v"; done';
    const r = spawnSync('bash', ['-c', script], { input: encodeRequest(fields[0]!, fields[1]!, fields[2]!, fields[3]!), encoding: 'utf8' });
    expect(r.stdout.split('\0').slice(0, 4)).toEqual(fields);
  });
});

describe('ONESHOT_SCRIPT (run by local bash)', () => {
  let dir: string;
  let real: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sd-wrapper-'));
    real = realpathSync(dir);
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  function oneshot(target: string, command: string, extraInput = '') {
    return spawnSync('bash', ['-c', ONESHOT_SCRIPT, 'sd'], {
      input: encodeRequest(NONCE, target, '/tmp', command) + extraInput,
      encoding: 'utf8',
      timeout: 20_000,
    });
  }

  it('reports the start dir as ok with the shell pid in an S frame on stderr', () => {
    const r = oneshot(dir, 'true');
    expect(r.stderr).toContain(`${NONCE}:S:${r.pid}:ok:${dir}:${NONCE}\n`);
  });

  it('ends stdout with an E frame carrying exit 0, ok and the physical cwd', () => {
    const r = oneshot(dir, 'true');
    expect(r.stdout.endsWith(`${NONCE}:E:0:ok:${real}:${NONCE}\n`)).toBe(true);
  });

  it('ends stderr with an X frame', () => {
    const r = oneshot(dir, 'true');
    expect(r.stderr.endsWith(`${NONCE}:X:${NONCE}\n`)).toBe(true);
  });

  it('runs the command in the target dir and keeps its output before the E frame', () => {
    const r = oneshot(dir, 'pwd -P; printf "no newline"');
    expect(r.stdout).toBe(`${real}\nno newline${NONCE}:E:0:ok:${real}:${NONCE}\n`);
  });

  it("keeps the command's stderr between the S and X frames", () => {
    const r = oneshot(dir, 'echo oops >&2');
    expect(r.stderr).toBe(`${NONCE}:S:${r.pid}:ok:${dir}:${NONCE}\noops\n${NONCE}:X:${NONCE}\n`);
  });

  it('reports "missing" and starts in the parent for a target that does not exist', () => {
    const gone = join(dir, 'deleted');
    mkdirSync(gone);
    rmSync(gone, { recursive: true });
    const r = oneshot(gone, 'pwd -P');
    expect(r.stderr).toContain(`${NONCE}:S:${r.pid}:missing:${dir}:${NONCE}\n`);
    expect(r.stdout.startsWith(`${real}\n`)).toBe(true);
  });

  it('walks up several missing levels to the nearest existing ancestor', () => {
    const r = oneshot(join(dir, 'a', 'b', 'c'), 'true');
    expect(r.stderr).toContain(`${NONCE}:S:${r.pid}:missing:${dir}:${NONCE}\n`);
  });

  it('reports "notdir" for a target that is a file', () => {
    const file = join(dir, 'file.txt');
    writeFileSync(file, 'x');
    const r = oneshot(file, 'true');
    expect(r.stderr).toContain(`${NONCE}:S:${r.pid}:notdir:${dir}:${NONCE}\n`);
  });

  it.skipIf(!unprivileged)('reports "denied" for a directory the user cannot enter', () => {
    const locked = join(dir, 'locked');
    mkdirSync(locked, { mode: 0o000 });
    chmodSync(dir, 0o755);
    const [cmd, ...pre] = unprivileged!;
    const r = spawnSync(cmd!, [...pre, 'bash', '-c', ONESHOT_SCRIPT, 'sd'], {
      input: encodeRequest(NONCE, locked, '/tmp', 'true'),
      encoding: 'utf8',
    });
    expect(r.stderr).toContain(`${NONCE}:S:${r.pid}:denied:${dir}:${NONCE}\n`);
  });

  it('reports the exit code of `exit 3` in the E frame', () => {
    const r = oneshot(dir, 'exit 3');
    expect(r.status).toBe(3);
    expect(r.stdout.endsWith(`${NONCE}:E:3:ok:${real}:${NONCE}\n`)).toBe(true);
  });

  it('reports the exit code of a failing last command in the E frame', () => {
    const r = oneshot(dir, 'false');
    expect(r.stdout.endsWith(`${NONCE}:E:1:ok:${real}:${NONCE}\n`)).toBe(true);
  });

  it('reports the dir the command moved to', () => {
    mkdirSync(join(dir, 'sub'));
    const r = oneshot(dir, 'cd sub');
    expect(r.stdout.endsWith(`${NONCE}:E:0:ok:${real}/sub:${NONCE}\n`)).toBe(true);
  });

  it('reports state "gone" when the command deletes the dir it ended in', () => {
    const r = oneshot(dir, 'mkdir d && cd d && rmdir ../d');
    expect(r.stdout).toMatch(new RegExp(`${NONCE}:E:0:gone:[^\\n]*:${NONCE}\\n$`));
    expect(r.stdout).toContain(`:gone:${real}/d:`);
  });

  it('passes the command verbatim: shell syntax in the target is never evaluated', () => {
    const r = oneshot(join(dir, '$(touch pwned)'), 'ls');
    expect(r.stdout).not.toContain('pwned');
    expect(r.stderr).toContain(`:missing:${dir}:`);
  });

  it('gives the command no stdin', () => {
    const r = oneshot(dir, 'cat; echo done', 'should not be read\n');
    expect(r.stdout.startsWith('done\n')).toBe(true);
  });

  it('does not let the command write frames through the wrapper descriptors', () => {
    const r = oneshot(dir, 'echo forged >&7');
    expect(r.stdout).not.toContain('forged');
    expect(r.stdout.endsWith(`${NONCE}:E:1:ok:${real}:${NONCE}\n`)).toBe(true);
  });
});

describe('the nonce is hidden from the command (issue 18)', () => {
  /** The nonce, written so that a command that prints its own text does not print it. */
  const hidden = `$(rev <<< ${[...NONCE].reverse().join('')})`;
  /** Prints how many lines of `what` carry the nonce (0 when it is hidden). */
  const count = (what: string): string => `n=${hidden}; { ${what}; } | grep -F -- "$n" | grep -v -e '^n=' -e ' n=' | wc -l`;

  it.each([
    ['set', count('set')],
    ['declare -p', count('declare -p')],
    ['env', count('env')],
    ['$_', `printf '%s\\n' "$_" | grep -cF -- ${hidden} || true`],
    ['the positional parameters', `printf '%s\\n' "$@" "$0" | grep -cF -- ${hidden} || true`],
    [
      '/proc/$$/cmdline and /proc/$$/environ',
      `tr '\\0' '\\n' < /proc/$$/cmdline | grep -cF -- ${hidden}; tr '\\0' '\\n' < /proc/$$/environ | grep -cF -- ${hidden} || true`,
    ],
  ])('%s shows no nonce, in both modes', (_what, command) => {
    for (const r of [
      spawnSync('bash', ['-c', ONESHOT_SCRIPT, 'sd'], { input: encodeRequest(NONCE, '/tmp', '/tmp', command), encoding: 'utf8' }),
      spawnSync('bash', ['-c', SHELL_SCRIPT, 'sd', BOOT], { input: encodeRequest(NONCE, '/tmp', '/tmp', command), encoding: 'utf8' }),
    ]) {
      const out = r.stdout.slice(r.stdout.indexOf('\n', r.stdout.startsWith(BOOT) ? 0 : -1) + 1);
      expect(out.replace(/^0\n/gm, '')).toMatch(new RegExp(`^${NONCE}:E:0:ok:/tmp:${NONCE}\n$`));
    }
  });

  it('`set` printed in full still ends with the real end frame', () => {
    const r = spawnSync('bash', ['-c', ONESHOT_SCRIPT, 'sd'], {
      input: encodeRequest(NONCE, '/tmp', '/tmp', 'set; declare -p; env'),
      encoding: 'utf8',
    });
    expect(r.stdout.endsWith(`${NONCE}:E:0:ok:/tmp:${NONCE}\n`)).toBe(true);
    expect(r.stdout.split(NONCE).length).toBe(3);
  });

  it("a command that assigns the wrapper's own variables changes nothing about its frames", () => {
    const input =
      encodeRequest(NONCE, '/tmp', '/tmp', '__sd_n=forged __sd_run= __sd_t=/ __sd_c=x __sd_tmp=/; echo hi') +
      encodeRequest('sd2222333344445555', '/tmp', '/tmp', 'pwd');
    const r = spawnSync('bash', ['-c', SHELL_SCRIPT, 'sd', BOOT], { input, encoding: 'utf8' });
    expect(r.stdout).toContain(`hi\n${NONCE}:E:0:ok:/tmp:${NONCE}\n/tmp\nsd2222333344445555:E:0:ok:/tmp:sd2222333344445555\n`);
  });
});

describe('the ancestor walk ends for any input (issue 12)', () => {
  it.each([['D:\\proj\\x'], ['\\\\server\\share'], ['relative/dir'], ['x'], ['C:/nope/x'], ['//'], ['/nope//deeper///']])(
    '%s: starts in the nearest enterable place',
    (target) => {
      const r = spawnSync('bash', ['-c', ONESHOT_SCRIPT, 'sd'], {
        input: encodeRequest(NONCE, target, '/tmp', 'pwd -P'),
        encoding: 'utf8',
        timeout: 10_000,
      });
      expect(r.error).toBeUndefined();
      expect(r.stderr).toMatch(new RegExp(`^${NONCE}:S:\\d+:(missing|ok):/[^\n]*:${NONCE}\n`));
      expect(r.stdout).toMatch(new RegExp(`${NONCE}:E:0:ok:/[^\n]*:${NONCE}\n$`));
    },
  );
});

describe('cwds deeper than PATH_MAX (issue 18)', () => {
  let dir: string;
  beforeEach(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'sd-deep-')));
  });
  afterEach(() => {
    // rm walks the tree with openat; fs.rmSync fails on paths past PATH_MAX.
    spawnSync('rm', ['-rf', dir]);
  });
  const part = 'd'.repeat(200);
  const goDeep = `for i in $(seq 25); do mkdir ${part} && cd ${part} || exit 9; done`;
  const deep = (d: string): string => d + `/${part}`.repeat(25);

  it('reports a cwd longer than 4 KB as ok, not deleted', () => {
    const r = spawnSync('bash', ['-c', ONESHOT_SCRIPT, 'sd'], { input: encodeRequest(NONCE, dir, '/tmp', goDeep), encoding: 'utf8' });
    expect(deep(dir).length).toBeGreaterThan(5000);
    expect(r.stdout).toBe(`${NONCE}:E:0:ok:${deep(dir)}:${NONCE}\n`);
  });

  it('enters a recorded cwd longer than 4 KB', () => {
    spawnSync('bash', ['-c', `cd ${dir} && ${goDeep}`]);
    const r = spawnSync('bash', ['-c', ONESHOT_SCRIPT, 'sd'], {
      input: encodeRequest(NONCE, deep(dir), '/tmp', 'pwd -P | wc -c'),
      encoding: 'utf8',
    });
    expect(r.stderr).toContain(`:S:${r.pid}:ok:${deep(dir)}:`);
    expect(r.stdout).toBe(`${deep(dir).length + 1}\n${NONCE}:E:0:ok:${deep(dir)}:${NONCE}\n`);
  });
});

describe('SHELL_SCRIPT (run by local bash)', () => {
  it('announces itself with an H frame and runs an encoded request in the target dir', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sd-shell-'));
    try {
      const real = realpathSync(dir);
      const command = 'printf "%s|" "a\\\\b" "$((1+2))"\npwd -P';
      const r = spawnSync('bash', ['-c', SHELL_SCRIPT, 'sd', BOOT], {
        input: encodeRequest(NONCE, dir, '/tmp', command),
        encoding: 'utf8',
      });
      expect(r.stdout).toBe(`${BOOT}:H:${r.pid}:${BOOT}\na\\b|3|${real}\n${NONCE}:E:0:ok:${real}:${NONCE}\n`);
      expect(r.stderr).toBe(`${NONCE}:S:${r.pid}:ok:${dir}:${NONCE}\n${NONCE}:X:${NONCE}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps the cwd of one request for the next in the same shell', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sd-shell-'));
    try {
      const real = realpathSync(dir);
      mkdirSync(join(dir, 'sub'));
      const n2 = 'sd2222333344445555';
      const input = encodeRequest(NONCE, dir, '/tmp', 'cd sub') + encodeRequest(n2, join(real, 'sub'), '/tmp', 'pwd -P');
      const r = spawnSync('bash', ['-c', SHELL_SCRIPT, 'sd', BOOT], { input, encoding: 'utf8' });
      expect(r.stdout).toContain(`${NONCE}:E:0:ok:${real}/sub:${NONCE}\n`);
      expect(r.stdout).toContain(`${real}/sub\n${n2}:E:0:ok:${real}/sub:${n2}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
