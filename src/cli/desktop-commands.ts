import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { DesktopAction, DesktopStatus } from '../api/contract.js';
import type { DeskClient } from '../client/http-client.js';
import { SandboxDeskError } from '../shared/errors.js';
import { CONTROL_WAIT_DEFAULT_MS, CONTROL_WAIT_MAX_MS } from '../shared/lease-types.js';
import { DURATION_ARG_FORMS, parseDurationArg } from '../shared/time-arg.js';
import { addClipboardCommand } from './clipboard-command.js';
import { printJson, type Out } from './output.js';

interface JsonFlag {
  json?: boolean;
}

type FrameFormat = 'png' | 'jpeg' | 'webp';
type ScreenAction = DesktopAction;

function placementOf(v: string | undefined): 'auto' | 'sandbox' | 'host' | undefined {
  if (v === undefined) return undefined;
  if (v === 'auto' || v === 'sandbox' || v === 'host') return v;
  throw new SandboxDeskError('invalid_input', `--placement must be auto, sandbox or host, got ${JSON.stringify(v)}`);
}

function intArg(v: string | undefined, name: string): number {
  if (v === undefined || !/^-?\d+$/.test(v))
    throw new SandboxDeskError('invalid_input', `${name} must be a whole number of pixels, got ${JSON.stringify(v)}`);
  return Number(v);
}

function intOpt(v: string | undefined, name: string): number | undefined {
  return v === undefined ? undefined : intArg(v, name);
}

function formatOf(v: string): FrameFormat {
  if (v === 'png' || v === 'jpeg' || v === 'webp') return v;
  throw new SandboxDeskError('invalid_input', `--format must be png, jpeg or webp, got ${JSON.stringify(v)}`);
}

function buttonOf(v: string | boolean | undefined): 1 | 2 | 3 {
  if (v === '1' || v === '2' || v === '3') return Number(v) as 1 | 2 | 3;
  throw new SandboxDeskError('invalid_input', `--button must be 1, 2 or 3, got ${JSON.stringify(v)}`);
}

function describe(s: DesktopStatus): string {
  const lines = [
    `desktop of ${s.sandbox}: ${s.running ? 'running' : 'not running'} (placement ${s.placement})`,
    ...(s.running ? [`display ${s.display}, ${s.geometry}`] : []),
    `control: ${s.leaseHolder === 'human' ? `a human (viewer ${s.leaseViewer})` : 'the agent'}`,
    ...(s.missing.length ? [`missing in the sandbox: ${s.missing.join(', ')}`] : []),
    ...(s.reason ? [`reason: ${s.reason}`] : []),
    ...(s.displayIsolation === 'isolated' ? [`display: isolated (runs as ${s.displayUser}; the sandbox's shell cannot reach it)`] : []),
    ...(s.displayIsolation === 'shared' ? [`display: shared with the sandbox's shell — ${s.displayIsolationReason}`] : []),
    ...describeRecording(s),
    ...(s.chromiumSandbox === false
      ? ['chromium runs without its inner sandbox: the container blocks user namespaces, so the container is the boundary']
      : []),
    ...(s.accel ? [`accel: ${s.accel}${s.browserNote ? ` — ${s.browserNote}` : ''}`] : []),
  ];
  return lines.join('\n') + '\n';
}

/** The screen recording's line(s) of `desktop status` (issue 16). */
function describeRecording(s: DesktopStatus): string[] {
  const r = s.recording;
  const size = `${(r.bytes / (1024 * 1024)).toFixed(1)} MiB`;
  return [
    r.on ? `recording: on since ${r.since} (${size})` : `recording: off${r.bytes ? ` (${size} recorded)` : ''}`,
    ...(r.warning ? [`recording warning: ${r.warning}`] : []),
  ];
}

/** Waits for Ctrl-C / SIGTERM: commands that serve something (a viewer, a port forward) stay up until then. */
function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

/** `desktop wait-control`'s exit code when the timeout passed with a person still in control (as `exec`'s timeout). */
export const WAIT_CONTROL_TIMED_OUT_EXIT = 124;

export function addDesktopCommands(
  program: Command,
  client: () => Promise<DeskClient>,
  out: Out,
  clipboardMaxBytes: () => number,
  setExit: (code: number) => void = () => undefined,
): void {
  const desktop = program
    .command('desktop')
    .description('the bot desktop inside a sandbox: Xvnc + Xfce + Chromium, streamed with no published port');

  desktop
    .command('start <name>')
    .description('start the desktop (or adopt the running one)')
    .option('--placement <where>', 'auto | sandbox | host (auto: in the sandbox; on the host only for the local backend)')
    .option('--geometry <WxH>', 'screen size', '1280x800')
    .option(
      '--grant-shell-display',
      "run the desktop as the sandbox user, so the sandbox's own shell can reach the display and the browser (status: displayIsolation shared)",
    )
    .option(
      '--no-record',
      'do not record the screen for replay (remembered until a start without it; config replay.record turns it off everywhere)',
    )
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { placement?: string; geometry: string; grantShellDisplay?: boolean; record: boolean }) => {
      if (!o.json) out.stderr(`starting the desktop of ${name}…\n`);
      const s = await (
        await client()
      ).call('desktopStart', {
        sandbox: name,
        placement: placementOf(o.placement),
        geometry: o.geometry,
        grantShellDisplay: o.grantShellDisplay === true,
        record: o.record,
      });
      if (o.json) printJson(out, s);
      else out.stdout(describe(s));
    });

  desktop
    .command('stop <name>')
    .description('stop the desktop and everything it started')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag) => {
      const s = await (await client()).call('desktopStop', { sandbox: name });
      if (o.json) printJson(out, s);
      else out.stdout(describe(s));
    });

  desktop
    .command('status <name>')
    .description('running, placement, display, geometry, who has control, what the image lacks')
    .option('--placement <where>', 'auto | sandbox | host')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { placement?: string }) => {
      const s = await (await client()).call('desktopStatus', { sandbox: name, placement: placementOf(o.placement) });
      if (o.json) printJson(out, s);
      else out.stdout(describe(s));
    });

  desktop
    .command('screenshot <name>')
    .description('a frame of the live framebuffer: the image, and its frameId/width/height/scale for later actions (--frame)')
    .option('--max-width <n>', 'scale to at most this width (aspect kept)')
    .option('--max-height <n>', 'scale to at most this height')
    .option('--format <f>', 'png | jpeg | webp', 'png')
    .option('--out <file>', 'where to write the image (default: screenshot-<frameId>.<format>)')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { out?: string; maxWidth?: string; maxHeight?: string; format: string }) => {
      const format = formatOf(o.format);
      const shot = await (
        await client()
      ).call('desktopScreenshot', {
        sandbox: name,
        maxWidth: intOpt(o.maxWidth, '--max-width'),
        maxHeight: intOpt(o.maxHeight, '--max-height'),
        format,
      });
      const frame = shot.frame;
      const image = Buffer.from(shot.image, 'base64');
      const file = o.out ?? `screenshot-${frame.frameId}.${format === 'jpeg' ? 'jpg' : format}`;
      writeFileSync(file, image);
      if (o.json) printJson(out, { file, bytes: image.length, ...frame });
      else
        out.stdout(
          `wrote ${file} (${image.length} bytes): frame ${frame.frameId}, ${frame.width}x${frame.height}, scale ${frame.scale} of ${frame.screenWidth}x${frame.screenHeight}\n`,
        );
    });

  /** One command per action: coordinates in the frame's pixels with --frame, else the screen's. */
  const action = (
    cmd: string,
    description: string,
    setup: (c: Command) => Command,
    toAction: (args: string[], o: Record<string, string | boolean | undefined>) => ScreenAction,
  ): void => {
    setup(desktop.command(cmd).description(`${description} (over the live RFB connection; prints the pointer measured after it)`))
      .option('--frame <id>', 'the screenshot frame whose coordinates the action uses (refused as stale_frame if the screen changed since)')
      .option('--json', 'machine-readable output')
      .action(async (...all: unknown[]) => {
        // commander passes the positional arguments, then the options, then the command.
        const o = all[all.length - 2] as Record<string, string | boolean | undefined> & JsonFlag & { frame?: string };
        const args = all.slice(0, -2) as string[];
        const action = toAction(args.slice(1), o);
        const r = await (await client()).call('desktopAct', { sandbox: args[0]!, action, frameId: o.frame });
        if (o.json) printJson(out, r);
        else
          out.stdout(
            `pointer at ${r.pointer.x},${r.pointer.y}${r.pointerInFrame ? ` (frame ${r.frameId}: ${r.pointerInFrame.x},${r.pointerInFrame.y})` : ''}${r.note ? ` — ${r.note}` : ''}\n`,
          );
      });
  };
  const button = (c: Command): Command => c.option('--button <n>', '1 (left), 2 (middle) or 3 (right)', '1');
  action(
    'click',
    'click at X,Y',
    (c) => button(c.argument('<name>').argument('<x>').argument('<y>')).option('--double', 'double click'),
    ([x, y], o) => ({
      kind: 'click',
      x: intArg(x, 'x'),
      y: intArg(y, 'y'),
      button: buttonOf(o.button),
      double: o.double === true,
    }),
  );
  action(
    'move',
    'move the pointer to X,Y',
    (c) => c.argument('<name>').argument('<x>').argument('<y>'),
    ([x, y]) => ({ kind: 'move', x: intArg(x, 'x'), y: intArg(y, 'y') }),
  );
  action(
    'drag',
    'drag from X,Y to TOX,TOY with a button held',
    (c) => button(c.argument('<name>').argument('<x>').argument('<y>').argument('<toX>').argument('<toY>')),
    ([x, y, tx, ty], o) => ({
      kind: 'drag',
      x: intArg(x, 'x'),
      y: intArg(y, 'y'),
      toX: intArg(tx, 'toX'),
      toY: intArg(ty, 'toY'),
      button: buttonOf(o.button),
    }),
  );
  action(
    'scroll',
    'scroll at X,Y',
    (c) =>
      c
        .argument('<name>')
        .argument('<x>')
        .argument('<y>')
        .argument('<direction>', 'up | down | left | right')
        .option('--amount <n>', 'wheel steps (1–100)', '3'),
    ([x, y, d], o) => {
      if (d !== 'up' && d !== 'down' && d !== 'left' && d !== 'right')
        throw new SandboxDeskError('invalid_input', `direction must be up, down, left or right, got ${JSON.stringify(d)}`);
      return { kind: 'scroll', x: intArg(x, 'x'), y: intArg(y, 'y'), direction: d, amount: intArg(String(o.amount), '--amount') };
    },
  );
  action(
    'type',
    'type any Unicode text',
    (c) => c.argument('<name>').argument('<text>'),
    ([t]) => ({ kind: 'type', text: t! }),
  );
  action(
    'key',
    'press keys: "ctrl+l", "Return", "ctrl+shift+t Return"',
    (c) => c.argument('<name>').argument('<keys>'),
    ([k]) => ({ kind: 'key', keys: k! }),
  );

  desktop
    .command('browser <name>')
    .description("forward the desktop browser's DevTools port to this machine and print the endpoint (serves until Ctrl-C)")
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag) => {
      // The forward lives in the server; this command shows it and keeps running until Ctrl-C.
      const ep = await (await client()).call('desktopBrowserEndpoint', { sandbox: name });
      if (o.json) out.stdout(JSON.stringify(ep) + '\n');
      else
        out.stdout(
          `DevTools endpoint: ${ep.httpUrl}\n  ws: ${ep.webSocketDebuggerUrl}\n  e.g. playwright: chromium.connectOverCDP('${ep.httpUrl}')\nforwarding until Ctrl-C…\n`,
        );
      await untilInterrupted();
    });

  addClipboardCommand(desktop, client, out, clipboardMaxBytes);

  // The API's waitForControl; the lease read first only to say, before waiting, who has control.
  desktop
    .command('wait-control <name>')
    .description(
      `wait until the agent may act: until a person who took control gives it back (exit 0), or the timeout (exit ${WAIT_CONTROL_TIMED_OUT_EXIT})`,
    )
    .option('--timeout <duration>', `how long to wait at most: ${DURATION_ARG_FORMS}; at most 10m`, `${CONTROL_WAIT_DEFAULT_MS / 1000}s`)
    .option('--json', 'machine-readable output: {mayAct, holder, viewerId, waitedMs, timedOut, reason}')
    .action(async (name: string, o: JsonFlag & { timeout: string }) => {
      const ms = parseDurationArg(o.timeout, '--timeout', CONTROL_WAIT_MAX_MS);
      const c = await client();
      const lease = await c.call('lease', { sandbox: name });
      if (lease.holder === 'human')
        out.stderr(
          `a person (viewer ${lease.viewerId ?? '?'}) has control of ${name}'s desktop: waiting up to ${(ms / 1000).toFixed(1)} s for them to give it back…\n`,
        );
      const w = await c.call('waitForControl', { sandbox: name, timeoutMs: ms });
      if (o.json) printJson(out, w);
      else if (w.mayAct) out.stdout(`the agent may act on ${name}'s desktop (waited ${(w.waitedMs / 1000).toFixed(1)} s)\n`);
      else
        out.stdout(
          `timeout: a person (viewer ${w.viewerId ?? '?'}) still has control of ${name}'s desktop after ${(w.waitedMs / 1000).toFixed(1)} s; run it again to wait longer\n`,
        );
      if (!w.mayAct) setExit(WAIT_CONTROL_TIMED_OUT_EXIT);
    });

  desktop
    .command('view <name>')
    .description('serve a noVNC viewer on 127.0.0.1 and print its URL (serves until Ctrl-C)')
    .option('--port <n>', 'port on 127.0.0.1 (default: a free one)')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { port?: string }) => {
      const port = o.port ? Number(o.port) : 0;
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new SandboxDeskError('invalid_input', `--port must be 0-65535, got ${JSON.stringify(o.port)}`);
      await (await client()).call('inspectSandbox', { name });
      // The service serves the viewer (its loopback listener, as for `serve`) while this process holds
      // its connection; loaded here, not at the top: `__complete` and `--help` must stay fast.
      const [{ clientServicePaths }, { holdServe }] = await Promise.all([
        import('../client/connect.js'),
        import('../client/serve-relay-client.js'),
      ]);
      const held = await holdServe(clientServicePaths({ env: process.env }).socketPath, {
        port,
        mcp: false,
        mcpSandboxes: [],
        env: process.env,
      });
      const url = `${held.grant.origin}/desktop/${encodeURIComponent(name)}?token=${held.grant.token}`;
      if (o.json) out.stdout(JSON.stringify({ url }) + '\n');
      else out.stdout(`Open ${url}\nserving until Ctrl-C…\n`);
      await Promise.race([untilInterrupted(), held.closed]);
      held.close();
    });
}
