import type { OperationView } from '../../../src/api/contract.js';

/** What the Electron preload exposes for notifications (main/preload.cts). */
interface NotifyBridge {
  notify?(title: string, body: string): void;
}

const LABEL: Record<string, string> = {
  create: 'Create',
  start: 'Boot',
  stop: 'Stop',
  'desktop-start': 'Desktop start',
  'image-build': 'Image build',
  'image-vm-build': 'VM image build',
  'image-pull': 'Image pull',
  'replay-export': 'Replay export',
};

/** A task's name for people: "Boot of vm-1", "Image build of my/img:1"; unknown kinds read as they are. */
export function operationTitle(op: Pick<OperationView, 'kind' | 'target'>): string {
  return `${LABEL[op.kind] ?? op.kind.replace(/-/g, ' ')} of ${op.target}`;
}

/** The notification of a task that ended: title and body. */
export function endedText(op: OperationView): { title: string; body: string } {
  const what = operationTitle(op);
  if (op.state === 'succeeded') return { title: `${what} finished`, body: op.message ?? 'done' };
  if (op.state === 'cancelled') return { title: `${what} cancelled`, body: op.error ?? '' };
  return { title: `${what} failed`, body: op.error ?? 'see the task list' };
}

/**
 * A system notification: Electron's (through main) in the app, the browser's Notification API in
 * browser mode — only when the person allowed it; nothing otherwise.
 */
export function systemNotify(title: string, body: string, w: Window = window): boolean {
  const bridge = (w as unknown as { sandboxDesk?: NotifyBridge }).sandboxDesk;
  if (bridge?.notify) {
    bridge.notify(title, body);
    return true;
  }
  const N = (w as unknown as { Notification?: typeof Notification }).Notification;
  if (!N || N.permission !== 'granted') return false;
  new N(title, { body });
  return true;
}

/** Asks the browser for permission once (from a click: browsers refuse it otherwise). */
export function askNotificationPermission(w: Window = window): void {
  const N = (w as unknown as { Notification?: typeof Notification }).Notification;
  if (N && N.permission === 'default') void N.requestPermission().catch(() => undefined);
}
