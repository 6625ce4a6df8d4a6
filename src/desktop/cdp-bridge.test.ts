import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SandboxDeskError } from '../shared/errors.js';
import { resourcePath } from '../platform/project-root.js';
import { CdpBridge, CLOSE_HUMAN_HAS_CONTROL, NulSplitter } from './cdp-bridge.js';

/**
 * The host bridge and the in-sandbox pipe relay (resources/desktop/cdp-pipe.py) together, with a fake
 * browser in place of Chromium: it speaks the pipe's framing on fds 3/4 and logs what it got, so the
 * test can see sessions, detaches and whether its pipe ever hit EOF.
 */
const FAKE_BROWSER = `
import json, os, sys
log = open(sys.argv[1], 'a', buffering=1)
buf, n = b'', 0
while True:
    d = os.read(3, 65536)
    if not d:
        log.write('EOF\\n'); break
    buf += d
    *msgs, buf = buf.split(b'\\0')
    for raw in msgs:
        m = json.loads(raw)
        sid, meth = m.get('sessionId'), m['method']
        log.write('%s %s %s\\n' % (meth, sid, (m.get('params') or {}).get('sessionId')))
        if meth == 'Target.attachToBrowserTarget':
            n += 1; res = {'sessionId': 'B%d' % n}
        elif meth == 'Browser.getVersion':
            res = {'protocolVersion': '1.3', 'product': 'FakeChrome/1', 'revision': 'r1', 'userAgent': 'fake', 'jsVersion': '1.0'}
        else:
            res = {'echo': m.get('params'), 'session': sid}
        out = {'id': m['id'], 'result': res}
        if sid: out['sessionId'] = sid
        os.write(4, json.dumps(out).encode() + b'\\0')
`;

function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      if (cond()) return resolve();
      if (Date.now() > deadline) return reject(new Error('timed out'));
      setTimeout(tick, 20);
    };
    tick();
  });
}

function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function call(ws: WebSocket, msg: object): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    ws.once('message', (d: Buffer) => resolve(JSON.parse(d.toString('utf8')) as Record<string, unknown>));
    ws.send(JSON.stringify(msg));
  });
}

describe('CdpBridge + cdp-pipe.py (fake browser)', () => {
  let dir: string;
  let sock: string;
  let log: string;
  let relay: ChildProcess;
  let bridge: CdpBridge;
  let refused: SandboxDeskError | null = null;
  const lines = (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sdesk-cdp-'));
    sock = join(dir, 'cdp.sock');
    log = join(dir, 'browser.log');
    writeFileSync(join(dir, 'fake.py'), FAKE_BROWSER);
    relay = spawn('python3', [resourcePath('desktop', 'cdp-pipe.py'), sock, '--', 'python3', join(dir, 'fake.py'), log], {
      stdio: 'ignore',
    });
    await waitFor(() => existsSync(sock));
    bridge = await CdpBridge.listen({
      openUpstream: () => spawn('socat', ['-b', '65536', 'STDIO', `UNIX-CONNECT:${sock}`]),
      refusal: () => refused,
      pollMs: 50,
    });
  });
  afterEach(() => {
    refused = null;
  });
  afterAll(() => {
    bridge?.dispose();
    relay?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('GET /json/version answers from the browser and names the WebSocket, on loopback', async () => {
    expect(bridge.httpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const v = (await (await fetch(`${bridge.httpUrl}/json/version/`)).json()) as Record<string, string>;
    expect(v).toMatchObject({ Browser: 'FakeChrome/1', 'Protocol-Version': '1.3', webSocketDebuggerUrl: bridge.webSocketDebuggerUrl });
    expect((await fetch(`${bridge.httpUrl}/json/list`)).status).toBe(404);
  });

  it('each client gets its own browser session: same ids, separate answers, session stripped', async () => {
    const a = await open(bridge.webSocketDebuggerUrl);
    const b = await open(bridge.webSocketDebuggerUrl);
    const [ra, rb] = await Promise.all([
      call(a, { id: 1, method: 'Test.echo', params: { who: 'a' } }),
      call(b, { id: 1, method: 'Test.echo', params: { who: 'b' } }),
    ]);
    expect(ra).toMatchObject({ id: 1, result: { echo: { who: 'a' } } });
    expect(rb).toMatchObject({ id: 1, result: { echo: { who: 'b' } } });
    expect(ra.sessionId).toBeUndefined();
    expect((ra.result as { session: string }).session).not.toBe((rb.result as { session: string }).session);
    // A session the client does not own is refused by the relay, not sent to the browser.
    expect(await call(a, { id: 2, method: 'Test.echo', sessionId: (rb.result as { session: string }).session })).toMatchObject({
      id: 2,
      error: { message: expect.stringMatching(/not found/) },
    });
    const bSession = (rb.result as { session: string }).session;
    b.close();
    // Its session (and the auto-attach settings it holds) ends with it; the browser's pipe does not.
    await waitFor(() => lines().includes(`Target.detachFromTarget None ${bSession}`));
    expect(lines()).not.toContain('EOF');
    expect(await call(a, { id: 3, method: 'Test.echo' })).toMatchObject({ id: 3 });
    a.close();
  });

  it('while refused: /json/version is 409, a new WebSocket is 409, an open one is closed with 4403 and why', async () => {
    const ws = await open(bridge.webSocketDebuggerUrl);
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    refused = new SandboxDeskError('human_has_control', "a human holds the control lease of sandbox s1's desktop");
    const c = await closed;
    expect(c.code).toBe(CLOSE_HUMAN_HAS_CONTROL);
    expect(c.reason).toMatch(/^human_has_control: a human holds/);
    const v = await fetch(`${bridge.httpUrl}/json/version`);
    expect(v.status).toBe(409);
    expect(await v.json()).toMatchObject({ error: { code: 'human_has_control' } });
    const status = await new Promise<number>((resolve) => {
      const s = new WebSocket(bridge.webSocketDebuggerUrl);
      s.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      s.on('open', () => resolve(101));
    });
    expect(status).toBe(409);
    refused = null;
    const again = await open(bridge.webSocketDebuggerUrl);
    expect(await call(again, { id: 1, method: 'Test.echo' })).toMatchObject({ id: 1 });
    again.close();
  });

  it('a message that arrives after the lease changed is not delivered', async () => {
    const ws = await open(bridge.webSocketDebuggerUrl);
    const before = lines().filter((l) => l.startsWith('Test.late')).length;
    refused = new SandboxDeskError('human_has_control', 'a human holds it');
    ws.send(JSON.stringify({ id: 9, method: 'Test.late' }));
    await new Promise((r) => ws.on('close', r));
    await new Promise((r) => setTimeout(r, 200));
    expect(lines().filter((l) => l.startsWith('Test.late')).length).toBe(before);
  });

  it('refuses web pages (an Origin header) and foreign Host names', async () => {
    expect((await fetch(`${bridge.httpUrl}/json/version`, { headers: { origin: 'http://evil.example' } })).status).toBe(403);
    await expect(open(bridge.webSocketDebuggerUrl, { origin: 'http://evil.example' })).rejects.toThrow(/403/);
    await expect(open(bridge.webSocketDebuggerUrl, { host: 'evil.example' })).rejects.toThrow(/403/);
    await expect(open(bridge.webSocketDebuggerUrl.replace(/browser\/.*/, 'browser/guess'))).rejects.toThrow(/404/);
  });
});

describe('NulSplitter', () => {
  it('joins messages split across chunks and skips empty ones', () => {
    const got: string[] = [];
    const s = new NulSplitter((m) => got.push(m.toString()));
    s.push(Buffer.from('{"a"'));
    s.push(Buffer.from(':1}\0\0{"b":2}\0{"c'));
    expect(got).toEqual(['{"a":1}', '{"b":2}']);
    s.push(Buffer.from('":3}\0'));
    expect(got).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });
});

describe('CdpBridge answer bound (answerTimeoutMs: a VM under TCG answers slowly)', () => {
  /** An upstream that answers Browser.getVersion after 1.5 s, as a relay that is slow to start would. */
  const SLOW = `import json, os, sys, time
d = os.read(0, 65536); m = json.loads(d.split(b'\\0')[0]); time.sleep(1.5)
os.write(1, json.dumps({'id': m['id'], 'result': {'protocolVersion': '1.3', 'product': 'Slow/1', 'revision': 'r', 'userAgent': 'u', 'jsVersion': 'j'}}).encode() + b'\\0')
time.sleep(5)`;
  const bridgeWith = (answerTimeoutMs?: number) =>
    CdpBridge.listen({
      openUpstream: () => spawn('python3', ['-c', SLOW], { stdio: ['pipe', 'pipe', 'pipe'] }),
      refusal: () => null,
      ...(answerTimeoutMs !== undefined ? { answerTimeoutMs } : {}),
    });

  it('waits as long as it is told, and no longer', async () => {
    const patient = await bridgeWith(10_000);
    const hasty = await bridgeWith(500);
    try {
      expect((await patient.version()).product).toBe('Slow/1');
      await expect(hasty.version()).rejects.toThrow('no answer from the browser');
    } finally {
      patient.dispose();
      hasty.dispose();
    }
  }, 30_000);
});
