import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { LocalServer } from '../api/local-server.js';
import type { SandboxDesk } from '../api/sandbox-desk.js';
import type { DesktopStatus } from '../desktop/desktop-service.js';
import type { PlacementSetting } from '../desktop/placement.js';
import { SandboxDeskError } from '../shared/errors.js';
import { printJson, type Out } from './output.js';

interface JsonFlag {
  json?: boolean;
}

function placementOf(v: string | undefined): PlacementSetting | undefined {
  if (v === undefined) return undefined;
  if (v === 'auto' || v === 'sandbox' || v === 'host') return v;
  throw new SandboxDeskError('invalid_input', `--placement must be auto, sandbox or host, got ${JSON.stringify(v)}`);
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
    ...(s.chromiumSandbox === false
      ? ['chromium runs without its inner sandbox: the container blocks user namespaces, so the container is the boundary']
      : []),
  ];
  return lines.join('\n') + '\n';
}

/** Waits for Ctrl-C / SIGTERM: commands that serve something (a viewer, a port forward) stay up until then. */
function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

export function addDesktopCommands(program: Command, core: () => SandboxDesk, out: Out): void {
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
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { placement?: string; geometry: string; grantShellDisplay?: boolean }) => {
      if (!o.json) out.stderr(`starting the desktop of ${name}…\n`);
      const s = await core().desktop.start(name, {
        placement: placementOf(o.placement),
        geometry: o.geometry,
        grantShellDisplay: o.grantShellDisplay === true,
      });
      if (o.json) printJson(out, s);
      else out.stdout(describe(s));
    });

  desktop
    .command('stop <name>')
    .description('stop the desktop and everything it started')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag) => {
      const s = await core().desktop.stop(name);
      if (o.json) printJson(out, s);
      else out.stdout(describe(s));
    });

  desktop
    .command('status <name>')
    .description('running, placement, display, geometry, who has control, what the image lacks')
    .option('--placement <where>', 'auto | sandbox | host')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { placement?: string }) => {
      const s = await core().desktop.status(name, { placement: placementOf(o.placement) });
      if (o.json) printJson(out, s);
      else out.stdout(describe(s));
    });

  desktop
    .command('screenshot <name>')
    .description('save a PNG of the real framebuffer')
    .requiredOption('--out <file.png>', 'where to write the PNG')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { out: string }) => {
      const png = await core().desktop.screenshot(name);
      writeFileSync(o.out, png);
      if (o.json) printJson(out, { file: o.out, bytes: png.length });
      else out.stdout(`wrote ${o.out} (${png.length} bytes)\n`);
    });

  desktop
    .command('browser <name>')
    .description("forward the desktop browser's DevTools port to this machine and print the endpoint (serves until Ctrl-C)")
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag) => {
      const ep = await core().desktop.browserEndpoint(name);
      if (o.json) out.stdout(JSON.stringify(ep) + '\n');
      else
        out.stdout(
          `DevTools endpoint: ${ep.httpUrl}\n  ws: ${ep.webSocketDebuggerUrl}\n  e.g. playwright: chromium.connectOverCDP('${ep.httpUrl}')\nforwarding until Ctrl-C…\n`,
        );
      await untilInterrupted();
    });

  desktop
    .command('view <name>')
    .description('serve a noVNC viewer on 127.0.0.1 and print its URL (serves until Ctrl-C)')
    .option('--port <n>', 'port on 127.0.0.1 (default: a free one)')
    .option('--json', 'machine-readable output')
    .action(async (name: string, o: JsonFlag & { port?: string }) => {
      const desk = core();
      await desk.inspectSandbox(name);
      const server = new LocalServer({ desk, port: o.port ? Number(o.port) : 0 });
      await server.listen();
      const url = server.viewerUrl(name);
      if (o.json) out.stdout(JSON.stringify({ url }) + '\n');
      else out.stdout(`Open ${url}\nserving until Ctrl-C…\n`);
      await untilInterrupted();
      await server.close();
    });
}
