/**
 * Test support for the qemu provider's template paths (QEMU faked away): a template written where the
 * store keeps one — its disk a copy of a real qcow2, its memory a filler, its files hashed as
 * template.json says — and what a provisioned VM of it left on disk (vm-template.test.ts).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readJson, vmFiles, type VmConfig } from '../vm-files.js';
import {
  imageHash,
  sha256File,
  TEMPLATE_USE,
  templateRef,
  templatesRoot,
  templateSlug,
  type TemplateMeta,
  type TemplateOptions,
  type TemplateUse,
} from '../vm-template-store.js';

/**
 * Writes the template of `image` (a name or a path, as a create names it) with `options` under `root`
 * (the provider's qemu dir), its disk copied from `disk`. `meta` overrides template.json's fields.
 */
export async function writeFakeTemplate(
  root: string,
  image: string,
  disk: string,
  options: TemplateOptions,
  extra: { memoryBytes: number; knownHosts?: string; meta?: Partial<TemplateMeta> },
): Promise<{ dir: string; meta: TemplateMeta }> {
  const dir = join(templatesRoot(root), templateSlug(image, options));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'disk.qcow2'), readFileSync(disk));
  writeFileSync(join(dir, 'memory.bin'), Buffer.alloc(extra.memoryBytes, 1));
  writeFileSync(join(dir, 'checkpoint.json'), JSON.stringify({ version: 1, accel: 'tcg', memory: true }));
  if (extra.knownHosts !== undefined) writeFileSync(join(dir, 'known_hosts'), extra.knownHosts);
  const meta: TemplateMeta = {
    version: 1,
    ref: templateRef(image, options),
    image,
    imageHash: await imageHash(root, { disk, kernel: null, initrd: null }),
    options,
    user: 'agent',
    cpuType: null,
    accel: 'tcg',
    files: {
      'disk.qcow2': { sha256: await sha256File(join(dir, 'disk.qcow2')), size: readFileSync(join(dir, 'disk.qcow2')).length },
      'memory.bin': { sha256: await sha256File(join(dir, 'memory.bin')), size: extra.memoryBytes },
    },
    createdAt: new Date().toISOString(),
    buildSeconds: 1,
    ...extra.meta,
  };
  writeFileSync(join(dir, 'template.json'), JSON.stringify(meta));
  return { dir, meta };
}

/** A provisioned VM's files, its config and (read when asked) its template use. */
export function provisionedVm(backendRef: string) {
  const files = vmFiles(backendRef);
  return { files, cfg: readJson<VmConfig>(files.config)!, use: () => readJson<TemplateUse>(join(files.dir, TEMPLATE_USE))! };
}
