import * as msg from './client-messages.js';
import { DESKTOP_SIZE_STATUS_TEXT, DesktopSizeReason, DesktopSizeStatus } from './protocol.js';

interface Pending {
  width: number;
  height: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * The client's side of SetDesktopSize: whether the server can be asked at all (it has sent an
 * ExtendedDesktopSize rect), the screen id to echo back, and which answer settles which request.
 */
export class DesktopSizeRequests {
  /** Set once the server has sent an ExtendedDesktopSize rect: only then may we send SetDesktopSize. */
  private announced = false;
  /** The server's first screen, echoed back: the spec asks clients to keep existing screen ids. */
  private screen = { id: 0, flags: 0 };
  private pending: Pending | undefined;
  /** Requests whose reason-1 answer hasn't arrived; answers come in request order. */
  private repliesOwed = 0;

  get supported(): boolean {
    return this.announced;
  }

  get inProgress(): boolean {
    return this.pending !== undefined;
  }

  /** Starts a request: the SetDesktopSize bytes to send, and a promise settled by the server's answer or the timeout. */
  start(width: number, height: number, timeoutMs: number): { message: Buffer; answered: Promise<void> } {
    const answered = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = undefined;
        reject(new Error(`RFB server did not confirm the resize to ${width}x${height} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending = {
        width,
        height,
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (err) => (clearTimeout(timer), reject(err)),
      };
    });
    this.repliesOwed++;
    return { message: msg.setDesktopSize(width, height, this.screen), answered };
  }

  /** An ExtendedDesktopSize rect arrived: x is the reason, y the status. */
  layoutReported(reason: number, status: number, screen: { id: number; flags: number } | undefined): void {
    this.announced = true;
    if (screen) this.screen = screen;
    // Only the answer to our latest request settles it. Xvnc first sends reason-0 rects for the
    // intermediate RandR steps, and a late answer to an earlier, timed-out request must not count either.
    if (reason !== DesktopSizeReason.ThisClient || this.repliesOwed === 0) return;
    this.repliesOwed--;
    if (this.repliesOwed > 0 || !this.pending) return;
    const { width, height } = this.pending;
    this.settle(
      status === DesktopSizeStatus.Ok
        ? undefined
        : new Error(
            `RFB server refused the resize to ${width}x${height}: ${DESKTOP_SIZE_STATUS_TEXT[status] ?? 'unknown error'} (status ${status})`,
          ),
    );
  }

  /** The connection ended: a request in flight fails with its reason. */
  cancel(err: Error): void {
    this.settle(err);
  }

  private settle(err?: Error): void {
    const pending = this.pending;
    this.pending = undefined;
    if (err) pending?.reject(err);
    else pending?.resolve();
  }
}
