/**
 * Issue 34 item 3: a person's terminal opened on the agent's session attaches to that session's shell
 * (tmux-like). Real core, real Docker sandbox, the terminal over its ticketed WebSocket as the window
 * drives it, the agent's commands over the HTTP API. One shell, one cwd: the agent `cd`s and the person
 * sees the command, its output and the prompt's directory follow; the person's `pwd` is the agent's
 * directory and the agent's next command is where it left off; the person's `cd` moves the session; an
 * agent command waits while the person's foreground command holds the prompt; after the terminal closes
 * the session's own shell continues in its cwd with its exported environment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { LocalServer } from '../../src/api/local-server.js';
import type { ExecResult } from '../../src/shared/exec-result.js';
import type { TerminalInfo } from '../../src/shared/terminal-types.js';
import { callApi, tempDesk, uniqueName, type TestDesk } from './helpers.js';

describe('a terminal attached to the agent session', () => {
  let t: TestDesk;
  let server: LocalServer;
  const sb = uniqueName('attach');
  const session = 'agent-1';
  let ws: WebSocket;
  let screen = '';
  let terminalId = '';
  const call = <T>(method: string, params: unknown) => callApi<T>(server, method, params);
  const agent = (command: string) => call<ExecResult>('exec', { sandbox: sb, session, command, timeoutSeconds: 20 });
  /** The screen from `mark` on (what the person saw after some point), without escape sequences and carriage returns. */
  const since = (mark: number) => () =>
    screen
      .slice(mark)
      // eslint-disable-next-line no-control-regex
      .replace(/\x1b\][^\x07]*\x07|\x1b\[[0-9;?]*[A-Za-z]|\r/g, '');

  beforeAll(async () => {
    t = tempDesk();
    server = new LocalServer({ desk: t.desk });
    await server.listen();
    await t.desk.createSandbox({ name: sb, backend: 'docker', image: 'sandbox-desk/base:latest' });
  }, 120_000);
  afterAll(async () => {
    ws?.close();
    await server?.close();
    await t?.dispose();
  });

  it('the agent cds, the person sees it and types pwd, the agent continues where it left off', async () => {
    // The agent's session exists first, with a cwd and an exported variable in its own shell.
    const first = await agent('cd /tmp && export AGENT_X=seven');
    expect(first.cwd).toBe('/tmp');

    const grant = await call<{ url: string; terminalId: string; session: string; cwd: string }>('terminalOpen', {
      sandbox: sb,
      session,
      cols: 120,
      rows: 30,
    });
    expect(grant).toMatchObject({ session, cwd: '/tmp' });
    terminalId = grant.terminalId;
    ws = new WebSocket(grant.url);
    ws.on('message', (d: Buffer) => (screen += d.toString()));
    await new Promise((r) => ws.once('open', r));
    // The window says so: the terminal is the session's shell once its channel is up.
    await expect
      .poll(async () => (await call<TerminalInfo[]>('listTerminals', { sandbox: sb })).find((x) => x.terminalId === terminalId)?.attached, {
        timeout: 20_000,
      })
      .toBe(true);
    // A second terminal on the same session is the same shell, not a second one.
    const again = await call<{ terminalId: string }>('terminalOpen', { sandbox: sb, session, cols: 120, rows: 30 });
    expect(again.terminalId).toBe(terminalId);

    // The session shell's environment moved into the terminal.
    let mark = screen.length;
    ws.send('echo "person sees $AGENT_X"\r');
    await expect.poll(since(mark), { timeout: 10_000 }).toMatch(/person sees seven/);

    // The agent cds: the person sees the command, its output, and the prompt in the new directory.
    mark = screen.length;
    const cd = await agent('cd /var/log && echo agent-moved');
    expect(cd).toMatchObject({ exitCode: 0, cwd: '/var/log', cwdObserved: true, stdout: 'agent-moved\n', startCwd: '/tmp' });
    await expect.poll(since(mark), { timeout: 10_000 }).toMatch(/\[agent\] \$ cd \/var\/log && echo agent-moved\nagent-moved\n/);
    await expect.poll(since(mark), { timeout: 10_000 }).toMatch(/\/var\/log[^\n]*[#$] /);

    // The person's pwd is the agent's directory (one shell).
    mark = screen.length;
    ws.send('pwd\r');
    await expect.poll(since(mark), { timeout: 10_000 }).toMatch(/pwd\n\/var\/log\n/);

    // The agent's next command is where the agent left it.
    expect(await agent('pwd')).toMatchObject({ stdout: '/var/log\n', cwd: '/var/log', startCwd: '/var/log' });

    // The person cds: the session follows (recorded by the prompt), and the agent's next command runs there.
    ws.send('cd /etc && export PERSON_Y=five\r');
    await expect
      .poll(async () => (await call<{ key: string; cwd: string }[]>('listSessions', { sandbox: sb })).find((s) => s.key === session)?.cwd, {
        timeout: 10_000,
      })
      .toBe('/etc');
    expect(await agent('pwd; echo "$PERSON_Y"')).toMatchObject({ stdout: '/etc\nfive\n', startCwd: '/etc' });
  });

  it("an agent command waits while the person's foreground command runs, then runs, and says it waited", async () => {
    const mark = screen.length;
    ws.send('sleep 3; echo person-slept\r');
    await expect.poll(since(mark), { timeout: 10_000 }).toMatch(/sleep 3; echo person-slept\n/);
    const t0 = Date.now();
    const r = await agent('echo agent-after-sleep');
    expect(r.stdout).toBe('agent-after-sleep\n');
    expect(Date.now() - t0).toBeGreaterThan(1500);
    expect(r.warnings.map((w) => w.code)).toContain('terminal_busy');
    const shown = since(mark)();
    expect(shown.indexOf('\nperson-slept\n')).toBeGreaterThan(-1);
    expect(shown.indexOf('\nperson-slept\n')).toBeLessThan(shown.indexOf('\nagent-after-sleep\n'));
  });

  it("the terminal closed: the session's next command runs in its cwd with the exported environment kept", async () => {
    const closed = new Promise((r) => ws.once('close', r));
    await call('terminalClose', { terminalId });
    await closed;
    await expect.poll(async () => (await call<TerminalInfo[]>('listTerminals', { sandbox: sb })).length, { timeout: 15_000 }).toBe(0);
    const r = await agent('pwd; echo "$AGENT_X $PERSON_Y"');
    expect(r).toMatchObject({ exitCode: 0, stdout: '/etc\nseven five\n', cwd: '/etc' });
    expect(r.warnings.map((w) => w.code)).not.toContain('terminal_busy');
  });
});
