import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A data dir for this run's shared VM template (vm-template-fixture.ts builds it on first use). */
    vmTemplateHome: string;
  }
}

/**
 * Integration tests claim a real Docker engine and the sandbox-desk/base image. Without them they
 * fail here, once, saying what to do — never skip silently.
 */
export default function setup(project: TestProject): () => void {
  try {
    execFileSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'pipe', timeout: 20_000 });
  } catch {
    throw new Error('integration tests need a running Docker engine: run `npm run setup` (it starts dockerd)');
  }
  try {
    execFileSync('docker', ['image', 'inspect', 'sandbox-desk/base:latest'], { stdio: 'pipe', timeout: 20_000 });
  } catch {
    throw new Error('integration tests need the image sandbox-desk/base:latest: run `npm run setup` to build it');
  }
  // One folder per run: the QEMU test files that boot from the shared template find it here (built
  // lazily by the first of them), and it goes with the run.
  const vmTemplateHome = mkdtempSync(join(tmpdir(), 'sdesk-run-templates-'));
  project.provide('vmTemplateHome', vmTemplateHome);
  return () => rmSync(vmTemplateHome, { recursive: true, force: true });
}
