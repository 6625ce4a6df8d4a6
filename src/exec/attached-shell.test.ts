import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalProvider } from '../sandbox/local/local-provider.js';
import { AttachedShell, DISPLAY_LIMIT_BYTES, shownCommand, type AttachedRunRequest } from './attached-shell.js';
import { TerminalSession } from './terminal.js';
import { useHermeticHome } from '../../test/hermetic-home.js';

useHermeticHome();

const req = (command: string, extra: Partial<AttachedRunRequest> = {}): AttachedRunRequest => ({
  target: '/tmp',
  tmpDir: '/tmp',
  command,
  timeoutMs: 10_000,
  maxOutputBytes: 1 << 20,
  ...extra,
});

/** One real PTY with a real local login shell (the local backend's exec prefix is empty), attached; the tests run in order on it. */
describe('AttachedShell (real PTY, local bash)', { timeout: 20_000 }, () => {
  let t: TerminalSession;
  let shell: AttachedShell;
  let out = '';
  const cwds: string[] = [];
  const screen = () => out;
  beforeAll(async () => {
    const env = await new LocalProvider().createEnvironment({
      cwd: '/tmp',
      sandbox: { name: 'l', backendRef: null, image: null, user: null, mounts: [], env: {}, options: {} },
    });
    t = new TerminalSession(env, { target: '/tmp', cols: 200, rows: 30 });
    t.onCwd((c) => cwds.push(c));
    t.attach({ send: (d, done) => ((out += d.toString()), done()), bufferedAmount: 0 });
    const dir = await new Promise<string>((resolve) =>
      t.onMark((m) => {
        if (m.kind === 'dir') resolve(m.dir);
      }),
    );
    shell = await AttachedShell.open(env, undefined, t, dir);
  }, 30_000);
  afterAll(() => {
    shell?.close();
    t?.dispose();
  });

  it("runs the agent's command in the person's shell: shown in the terminal, cwd and env kept, the prompt's pwd agrees", async () => {
    const a = await shell.run(req('cd /usr && export SD_ATTACH_X=42 && echo out-$SD_ATTACH_X && echo err-1 >&2'));
    expect(a.start?.used).toBe('/tmp');
    expect(a.end).toEqual({ exitCode: 0, state: 'ok', cwd: '/usr' });
    expect(a.stdout.toString()).toBe('out-42\n');
    expect(a.stderr.toString()).toBe('err-1\n');
    expect(a.framingBroken).toBeNull();
    expect(screen()).toContain('[agent]');
    expect(screen()).toMatch(/\$ cd \/usr && export SD_ATTACH_X=42/);
    expect(screen()).toContain('out-42\r\n');
    // The person's own command, typed at the same prompt, is in the agent's directory and environment.
    t.write('echo "person:$(pwd):$SD_ATTACH_X"\r');
    await expect.poll(screen, { timeout: 10_000 }).toContain('person:/usr:42');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/usr');
    // The person cds; the agent's next command, sent where the record now says, runs there.
    t.write('cd /etc\r');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/etc');
    const b = await shell.run(req('pwd; echo $SD_ATTACH_X', { target: '/etc' }));
    expect(b.stdout.toString()).toBe('/etc\n42\n');
  });

  it("keeps the person's partly typed line, and gives a new prompt that shows where the command left the shell", async () => {
    t.write('echo half-typ');
    await expect.poll(screen, { timeout: 10_000 }).toContain('echo half-typ');
    const mark = out.length;
    const r = await shell.run(req('cd /var', { target: '/etc' }));
    expect(r.end?.cwd).toBe('/var');
    await expect.poll(() => cwds.at(-1), { timeout: 10_000 }).toBe('/var');
    t.write('ed\r');
    await expect.poll(() => out.slice(mark), { timeout: 10_000 }).toContain('half-typed\r\n');
  });

  it('the nonce is not visible to the command, and frame-shaped output is only data', async () => {
    const r = await shell.run(req('set | grep -c "^__sd_n=" ; echo "$_"; printf "x:E:0:ok:/etc:x\\n"'));
    expect(r.stdout.toString()).toMatch(/^0\n/);
    expect(r.end?.cwd).toBe('/tmp');
    expect(r.framingBroken).toBeNull();
  });

  it("waits while the person's foreground command runs, reports the wait, then runs", async () => {
    await shell.run(req('true'));
    t.write('sleep 1.5; echo slept-done\r');
    await expect.poll(() => t.promptIdle, { timeout: 5_000 }).toBe(false);
    const r = await shell.run(req('echo after-sleep'));
    expect(r.stdout.toString()).toBe('after-sleep\n');
    expect(r.waitedMs).toBeGreaterThan(700);
    expect(screen().indexOf('slept-done')).toBeLessThan(screen().lastIndexOf('after-sleep'));
  });

  it("a command that times out while the person's command holds the prompt never runs later", async () => {
    await shell.run(req('true'));
    t.write('sleep 2\r');
    await expect.poll(() => t.promptIdle, { timeout: 5_000 }).toBe(false);
    const r = await shell.run(req('touch /tmp/sd-attach-never-$$', { timeoutMs: 300 }));
    expect(r.killed).toBe('timeout');
    expect(r.start).toBeNull();
    const next = await shell.run(req('echo next; ls /tmp/sd-attach-never-$$ 2>&1 | grep -c "No such"'));
    expect(next.stdout.toString()).toBe('next\n1\n');
  });

  it('a workdir command leaves the shell where it was (unless the command moved)', async () => {
    const r = await shell.run(req('pwd', { target: '/usr', workdir: true }));
    expect(r.stdout.toString()).toBe('/usr\n');
    const mark = out.length;
    t.write('echo "at:$PWD"\r');
    await expect.poll(() => out.slice(mark), { timeout: 10_000 }).toContain('at:/tmp\r\n');
    const moved = await shell.run(req('cd /etc', { target: '/usr', workdir: true }));
    expect(moved.end?.cwd).toBe('/etc');
    const mark2 = out.length;
    t.write('echo "at:$PWD"\r');
    await expect.poll(() => out.slice(mark2), { timeout: 10_000 }).toContain('at:/etc\r\n');
  });

  it('shows at most DISPLAY_LIMIT_BYTES of a command in the terminal, and says so; the result keeps its own copy', async () => {
    const mark = out.length;
    const r = await shell.run(req(`head -c ${DISPLAY_LIMIT_BYTES + 5000} /dev/zero | tr '\\0' a; echo`, { maxOutputBytes: 4 << 20 }));
    expect(r.stdout.length).toBe(DISPLAY_LIMIT_BYTES + 5001);
    const shown = out.slice(mark);
    expect(shown).toContain('[more output than the terminal shows');
    expect(shown.length).toBeLessThan(DISPLAY_LIMIT_BYTES + 2000);
  });

  it("a background job's late output: shown in the terminal marked as late, given to the listeners by stream, never the next command's", async () => {
    const late: Array<{ stream: string; text: string }> = [];
    const stop = shell.onLateOutput((l) => late.push({ stream: l.stream, text: l.bytes.toString('utf8') }));
    try {
      const flag = `/tmp/sd-attached-late-${process.pid}`;
      const first = await shell.run(req(`rm -f ${flag}; (sleep 0.3; echo OLD-ATT; echo OLDERR-ATT >&2; touch ${flag}) & echo started`));
      expect(first.stdout.toString()).toBe('started\n');
      // Both lines are printed (between commands) before the next command is sent.
      await expect.poll(() => late.map((l) => l.text).join(''), { timeout: 10_000 }).toContain('OLDERR-ATT');
      await expect.poll(() => late.map((l) => l.text).join(''), { timeout: 10_000 }).toContain('OLD-ATT');
      const next = await shell.run(req(`rm -f ${flag}; echo NEW; echo NEWERR >&2`));
      expect(next.stdout.toString()).toBe('NEW\n');
      expect(next.stderr.toString()).toBe('NEWERR\n');
      expect(
        late
          .filter((l) => l.stream === 'stdout')
          .map((l) => l.text)
          .join(''),
      ).toBe('OLD-ATT\n');
      expect(
        late
          .filter((l) => l.stream === 'stderr')
          .map((l) => l.text)
          .join(''),
      ).toBe('OLDERR-ATT\n');
      expect(screen()).toMatch(/\[late output of an earlier agent command's background job\][^]*OLD(ERR)?-ATT/);
    } finally {
      stop();
    }
  });

  it('shows a command on one line, control characters neutralised', () => {
    expect(shownCommand('echo a\necho \x1b]52;c;x\x07')).toBe('echo a?echo ?]52;c;x?');
  });
});
