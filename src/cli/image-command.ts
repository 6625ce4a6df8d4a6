import type { Command } from 'commander';
import type { ImageInfo, ImageTask, ImageTaskEvent } from '../api/contract.js';
import { resolve } from 'node:path';
import type { DeskClient } from '../client/http-client.js';
import { SandboxDeskError } from '../shared/errors.js';
import { printJson, type Out } from './output.js';

interface JsonFlag {
  json?: boolean;
}

/** 1536 → "1.5 KiB"; sizes as the window shows them. */
export function humanSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
}

/** A whole-number flag, or a clear error naming it. */
function wholeNumber(raw: string | undefined, flag: string, what: string): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw.trim()))
    throw new SandboxDeskError('invalid_input', `${flag} ${JSON.stringify(raw)} is not a whole number`, {
      hint: `give a number of ${what}`,
    });
  return Number(raw);
}

export function imageTable(images: ImageInfo[]): string {
  if (images.length === 0) return 'No images yet. Build one: sandbox-desk image build --tag NAME FOLDER\n';
  const rows = [
    ['KIND', 'IMAGE', 'SIZE', 'CREATED', 'DESKTOP', 'USED BY'],
    ...images.map((i) => [
      i.kind,
      i.ref,
      humanSize(i.sizeBytes),
      i.createdAt?.slice(0, 16).replace('T', ' ') ?? '-',
      i.desktop === null ? '?' : i.desktop ? 'yes' : 'no',
      i.usedBy.join(', ') || '-',
    ]),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((v, c) => (c === r.length - 1 ? v : v.padEnd(widths[c]!))).join('  ')).join('\n') + '\n';
}

/** One event as a line for the terminal: steps stand out, output is indented under its step. */
export function eventLine(e: ImageTaskEvent): string {
  if (e.kind === 'step') return `step ${e.step}/${e.total}: ${e.text}\n`;
  if (e.kind === 'progress')
    return `  ${e.layer}: ${e.text} ${e.layerTotal ? `${humanSize(e.current ?? 0)}/${humanSize(e.layerTotal)}` : ''}\n`;
  if (e.kind === 'error') return `error: ${e.text}\n`;
  if (e.kind === 'done') return `${e.text}\n`;
  return `  | ${e.text}\n`;
}

/** How often a running task is asked for its new events. */
const TASK_POLL_MS = 200;

/**
 * A task the server runs, followed from here: each event once, as it arrives (read by `imageTask`
 * polls: `dropped` + the index says which were shown), until it ends; aborting `signal` asks
 * `cancelImageTask`, and the task then ends cancelled.
 */
function followTask(
  client: DeskClient,
  first: ImageTask,
  listen: { signal: AbortSignal; onEvent: (e: ImageTaskEvent) => void },
): { done: Promise<ImageTask> } {
  let shown = 0;
  const report = (t: ImageTask): void => {
    const from = Math.max(0, shown - t.dropped);
    for (const e of t.events.slice(from)) listen.onEvent(e);
    shown = t.dropped + t.events.length;
  };
  const cancel = (): void => void client.call('cancelImageTask', { id: first.id }).catch(() => undefined);
  // A Ctrl-C while the task was being started has already fired: cancel it now.
  if (listen.signal.aborted) cancel();
  else listen.signal.addEventListener('abort', cancel, { once: true });
  const done = (async () => {
    let t = first;
    report(t);
    while (t.state === 'running') {
      await new Promise((r) => setTimeout(r, TASK_POLL_MS));
      t = await client.call('imageTask', { id: first.id });
      report(t);
    }
    return t;
  })();
  return { done };
}

/**
 * Runs a task to its end, printing each event (stderr, or one JSON line each on stdout with --json);
 * Ctrl-C cancels it (exit 130). Its error is thrown as Sandbox Desk's own.
 */
async function follow(
  out: Out,
  json: boolean | undefined,
  setExit: (code: number) => void,
  start: (listen: { signal: AbortSignal; onEvent: (e: ImageTaskEvent) => void }) => Promise<{ done: Promise<ImageTask> }>,
): Promise<ImageTask | null> {
  const abort = new AbortController();
  const onSignal = (): void => {
    out.stderr('sandbox-desk: cancelling…\n');
    abort.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    let lastProgress = 0;
    const task = await (
      await start({
        signal: abort.signal,
        onEvent: (e) => {
          if (json) return out.stdout(JSON.stringify({ event: e }) + '\n');
          // Layer byte counts arrive many times a second: a line per layer every half second is enough.
          if (e.kind === 'progress' && Date.now() - lastProgress < 500) return;
          if (e.kind === 'progress') lastProgress = Date.now();
          if (e.kind !== 'error') out.stderr(eventLine(e));
        },
      })
    ).done;
    if (task.state === 'cancelled') {
      out.stderr(`sandbox-desk: ${task.error?.message ?? 'cancelled'}\n`);
      setExit(130);
      if (json) out.stdout(JSON.stringify({ task }) + '\n');
      return null;
    }
    if (task.error) throw new SandboxDeskError(task.error.code as never, task.error.message, { hint: task.error.hint });
    if (json) out.stdout(JSON.stringify({ task }) + '\n');
    return task;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

export function addImageCommands(program: Command, client: () => Promise<DeskClient>, out: Out, setExit: (code: number) => void): void {
  const image = program
    .command('image')
    .description('Docker and VM images: list, inspect, build (with progress, Ctrl-C cancels), pull, rm');

  image
    .command('list')
    .description('images the app made or its sandboxes use, Docker and VM, with sizes, users and desktop parts')
    .option('--json', 'machine-readable output')
    .action(async (o: JsonFlag) => {
      const listing = await (await client()).call('listImages', {});
      if (o.json) return printJson(out, listing);
      for (const w of listing.warnings) out.stderr(`sandbox-desk: warning: ${w}\n`);
      out.stdout(imageTable(listing.images));
    });

  image
    .command('inspect <image>')
    .description('one image: its tags, size, users, and what the engine or image.json says')
    .option('--json', 'machine-readable output')
    .action(async (ref: string, o: JsonFlag) => {
      const info = await (await client()).call('inspectImage', { ref });
      if (o.json) return printJson(out, info);
      out.stdout(imageTable([info]) + JSON.stringify(info.details, null, 2) + '\n');
    });

  image
    .command('rm <image>')
    .description('remove an image (refused while a sandbox uses it)')
    .option('--json', 'machine-readable output')
    .action(async (ref: string, o: JsonFlag) => {
      const r = await (await client()).call('removeImage', { ref });
      if (o.json) printJson(out, r);
      else out.stdout(`Removed ${r.removed}.\n`);
    });

  image
    .command('build [target]')
    .description(
      'build a Docker image from a folder or a Dockerfile (--tag T FOLDER | --tag T --file F), or a VM image by name (debian-test, debian-desktop)\n' +
        'examples: sandbox-desk image build --tag my/tool:1 ./tool   ·   sandbox-desk image build debian-test',
    )
    .option('--tag <tag>', 'the Docker image to make, e.g. my/tool:1')
    .option('--file <dockerfile>', 'the Dockerfile (default FOLDER/Dockerfile; alone, its folder is the context)')
    .option('--json', 'one JSON object per line: {"event":…} as it happens, then {"task":…}')
    .action(async (target: string | undefined, o: JsonFlag & { tag?: string; file?: string }) => {
      if (o.tag === undefined) {
        // Loaded here: only `image build` needs the catalog's names.
        const { BUILDABLE_VM_IMAGES } = await import('../sandbox/qemu/vm-image-catalog.js');
        if (target === undefined || !(BUILDABLE_VM_IMAGES as readonly string[]).includes(target))
          throw new SandboxDeskError('invalid_input', target === undefined ? 'nothing to build' : `${target} is not a VM image name`, {
            hint: 'a Docker image: image build --tag NAME FOLDER; a VM image: image build debian-test (or debian-desktop)',
          });
        const c = await client();
        const t = await follow(out, o.json, setExit, async (l) => followTask(c, await c.call('buildImage', { vmName: target }), l));
        if (t && !o.json) out.stdout(`Built VM image ${t.target}.\n`);
        return;
      }
      // Paths as this shell means them (the server may run elsewhere): a relative --file is inside the
      // folder when one is given, else from here — as the build always read them.
      const context = target === undefined ? undefined : resolve(target);
      const file = o.file === undefined ? undefined : resolve(context ?? '.', o.file);
      const c = await client();
      const t = await follow(out, o.json, setExit, async (l) =>
        followTask(c, await c.call('buildImage', { tag: o.tag!, context, file }), l),
      );
      if (t && !o.json) out.stdout(`Built ${t.target} (${t.result?.id?.slice(7, 19)}).\n`);
    });

  const template = image
    .command('template')
    .description(
      'VM templates: a VM image booted once and saved with its memory; `sandbox create --backend qemu` of that image and options is then restored from it (seconds instead of a boot)',
    );

  template
    .command('build <image>')
    .description(
      'boot IMAGE once with these options, wait until it is ready, save its memory as the template (rebuilds an existing one)\n' +
        'example: sandbox-desk image template build debian-test --memory 1024 --cpus 2',
    )
    .option('--memory <MiB>', 'guest memory; a create is restored only with the same (default: the image’s advice, or 1024)')
    .option('--cpus <n>', 'virtual CPUs; a create is restored only with the same (default 2)')
    .option(
      '--desktop',
      'with the bot desktop (installed where the image lacks it) running and checked in the saved memory: a create from it has its desktop at once',
    )
    .option('--json', 'one JSON object per line: {"event":…} as it happens, then {"task":…}')
    .action(async (ref: string, o: JsonFlag & { memory?: string; cpus?: string; desktop?: boolean }) => {
      const memory = wholeNumber(o.memory, '--memory', 'MiB, e.g. --memory 1024');
      const cpus = wholeNumber(o.cpus, '--cpus', 'CPUs, e.g. --cpus 2');
      const c = await client();
      const t = await follow(out, o.json, setExit, async (l) =>
        followTask(c, await c.call('buildVmTemplate', { image: ref, memory, cpus, desktop: o.desktop }), l),
      );
      if (t && !o.json) out.stdout(`Built VM template ${t.result?.ref}.\n`);
    });

  template
    .command('rm <template>')
    .description('remove a VM template (as listed by image list, e.g. debian-test@1024m-2cpu); VMs made from it keep running')
    .option('--json', 'machine-readable output')
    .action(async (ref: string, o: JsonFlag) => {
      const r = await (await client()).call('removeImage', { ref });
      if (o.json) printJson(out, r);
      else out.stdout(`Removed ${r.removed}.\n`);
    });

  image
    .command('pull <image>')
    .description('pull a Docker image with per-layer progress (needs a reachable registry)')
    .option('--json', 'one JSON object per line: {"event":…}, then {"task":…}')
    .action(async (ref: string, o: JsonFlag) => {
      const c = await client();
      const t = await follow(out, o.json, setExit, async (l) => followTask(c, await c.call('pullImage', { ref }), l));
      if (t && !o.json) out.stdout(`Pulled ${t.target}.\n`);
    });
}
