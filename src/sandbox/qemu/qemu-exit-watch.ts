import type { IDisposable } from '../../shared/lifecycle.js';
import type { ProviderWatchListener } from '../provider.js';
import { processStartTime } from './qemu-process.js';

/** How often a watched QEMU process is looked at (a /proc read per VM: cheap). */
const CHECK_MS = 1000;

interface Started {
  sandbox: string;
  backendRef: string | null;
  pid: number;
  pidStart: string;
}

/**
 * QEMU's exit, for the VMs this core started: QEMU runs detached (it outlives the app), so there is
 * no child 'exit' to listen to; while someone watches, each pid is checked against its recorded start
 * time (a reused pid is not the VM) and a VM that died — killed, crashed, the guest powered off —
 * is reported once.
 */
export class QemuExitWatch {
  private readonly started = new Map<string, Started>();

  constructor(
    private readonly startTimeOf: (pid: number) => string | null = processStartTime,
    private readonly checkMs = CHECK_MS,
  ) {}

  /** The provider booted this VM (its run.json was just written). */
  add(s: Started): void {
    this.started.set(s.sandbox, s);
  }

  watch(listener: ProviderWatchListener): IDisposable {
    const timer = setInterval(() => {
      for (const [name, s] of this.started) {
        if (this.startTimeOf(s.pid) === s.pidStart) continue;
        this.started.delete(name);
        listener.changed({ sandbox: s.sandbox, backendRef: s.backendRef, action: 'die' });
      }
    }, this.checkMs);
    timer.unref?.();
    return { dispose: () => clearInterval(timer) };
  }
}
