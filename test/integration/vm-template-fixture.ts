/**
 * One VM template per test run, shared by the QEMU test files that do not test booting itself: the
 * first file that asks builds it (a boot of debian-test, its memory saved) in the run's folder from
 * global-setup.ts, under a lock; every later file links it into its own data dir, and its creates are
 * restored from it in seconds instead of a boot. No file depends on another's order: whichever asks
 * first builds, the others wait for it. A build that fails leaves the files to boot cold (slower, still
 * correct) — only qemu-template.test.ts insists on the template.
 */
import { copyFileSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { QemuProvider } from '../../src/sandbox/qemu/qemu-provider.js';
import { templateRef, templateSlug, templatesRoot } from '../../src/sandbox/qemu/vm-template-store.js';

/** The shape of the shared template: what a test's qemu options must say to be restored from it. */
export const SHARED_TEMPLATE = { image: 'debian-test', memoryMiB: 512, cpus: 1, desktop: false } as const;
/** As `--option`s: 512 MiB, 1 CPU (several guests at once on a shared 2-core host), TCG (KVM hangs here). */
export const SHARED_TEMPLATE_OPTIONS = { memory: '512', cpus: '1', accel: 'tcg' } as const;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let built: Promise<string | null> | null = null;

/** Builds the run's template once (or waits for the file building it); its folder, or null if the build failed. */
function sharedTemplateDir(): Promise<string | null> {
  built ??= (async () => {
    // SANDBOX_DESK_TEST_TEMPLATE_HOME: a data dir whose template outlives the run (local reruns skip the build).
    const home = process.env.SANDBOX_DESK_TEST_TEMPLATE_HOME || inject('vmTemplateHome');
    const dir = join(templatesRoot(join(home, 'qemu')), templateSlug(SHARED_TEMPLATE.image, SHARED_TEMPLATE));
    const lock = join(home, 'build.lock');
    const failed = join(home, 'build.failed');
    for (;;) {
      if (existsSync(join(dir, 'template.json'))) return dir;
      if (existsSync(failed)) return null;
      try {
        mkdirSync(lock);
        break;
      } catch {
        await sleep(1000); // another project's file is building it
      }
    }
    try {
      if (existsSync(join(dir, 'template.json'))) return dir;
      const provider = new QemuProvider({ dataDir: home });
      await provider.templates.build(
        { image: SHARED_TEMPLATE.image, memoryMiB: SHARED_TEMPLATE.memoryMiB, cpus: SHARED_TEMPLATE.cpus },
        { progress: () => undefined },
      );
      return dir;
    } catch (err) {
      writeFileSync(failed, String(err));
      process.stderr.write(`vm-template-fixture: the shared VM template could not be built; QEMU tests boot cold: ${String(err)}\n`);
      return null;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  })();
  return built;
}

/**
 * Makes the run's template visible in `dataDir` (a link in its qemu/templates folder). Returns its ref
 * (`debian-test@512m-1cpu`), or null when it could not be built.
 */
export async function useSharedVmTemplate(dataDir: string): Promise<string | null> {
  const dir = await sharedTemplateDir();
  if (!dir) return null;
  const root = templatesRoot(join(dataDir, 'qemu'));
  mkdirSync(root, { recursive: true, mode: 0o700 });
  // The template's guest authorises the app key of the data dir it was built in: this data dir uses it too.
  const home = join(dir, '..', '..');
  for (const f of ['id_ed25519', 'id_ed25519.pub'])
    if (!existsSync(join(dataDir, 'qemu', f))) copyFileSync(join(home, f), join(dataDir, 'qemu', f));
  const link = join(root, templateSlug(SHARED_TEMPLATE.image, SHARED_TEMPLATE));
  if (!existsSync(link)) symlinkSync(dir, link);
  return templateRef(SHARED_TEMPLATE.image, SHARED_TEMPLATE);
}
