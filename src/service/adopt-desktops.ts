/**
 * A service that starts (on demand, or after a `kill -9` of the one before) records every desktop
 * already running in its sandboxes at once (issue 34, items 4 and 5): a desktop is recorded once its
 * process looks at it (DesktopService.status ensures the recording), and nobody may look for a long
 * time — an agent driving the desktop through `exec` alone, or no client at all.
 */

/** The part of the core this needs. */
export interface AdoptHost {
  listSandboxes(): Promise<Array<{ name: string; state: string }>>;
  desktopStatus(sandbox: string): Promise<unknown>;
  warn(sandbox: string, err: unknown): void;
}

/** Looks at each running sandbox's desktop once (in turn: a QEMU guest's probe is slow, the engine is shared). */
export async function adoptRunningDesktops(host: AdoptHost): Promise<string[]> {
  const looked: string[] = [];
  for (const s of await host.listSandboxes()) {
    if (s.state !== 'running') continue;
    try {
      await host.desktopStatus(s.name);
      looked.push(s.name);
    } catch (err) {
      host.warn(s.name, err);
    }
  }
  return looked;
}
