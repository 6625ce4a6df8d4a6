import type { IDisposable } from '../../shared/lifecycle.js';
import { Encoding } from '../rfb/protocol.js';
import { RfbClient, type ByteTransport } from '../rfb/rfb-client.js';

/**
 * A second RFB connection to the same Xvnc that carries input only: PointerEvents, KeyEvents and the
 * fences that say Xvnc has handled them. It never asks for a framebuffer update, so nothing is ever
 * queued in front of its fence replies.
 *
 * Why not the live (pixel) connection: Xvnc writes a fence reply into the same output stream as the
 * pixels, after whatever update it is sending. On an animating screen that connection is nearly always
 * mid-update — a full 1280×800 Raw frame is 4 MB, 135 ms over direct TCP and 450 ms through the exec
 * relay on a loaded machine — so "wait until Xvnc handled the click" waited for pixels nobody asked
 * about (click p50 148 ms against 8 ms on a quiet screen). Over a pixel-free connection the same fence
 * is one relay round trip (≈ 1–5 ms).
 *
 * Xvnc treats every shared client's input alike, so a click here is the same click as on the live
 * connection; what the agent sees still comes from the live connection's framebuffer.
 */

/** Fence for its replies; Raw only because SetEncodings must name a pixel encoding; the size pseudo-encodings because Xvnc closes a client that cannot follow a resize. */
export const INPUT_ENCODINGS = [Encoding.Raw, Encoding.DesktopSize, Encoding.ExtendedDesktopSize, Encoding.Fence];

const RETRY_AFTER_MS = 10_000;

export class InputChannel implements IDisposable {
  private client: RfbClient | undefined;
  private connecting: Promise<RfbClient> | undefined;
  private disposed = false;
  private failedAt = 0;

  constructor(
    private readonly open: () => ByteTransport | Promise<ByteTransport>,
    private readonly timeoutMs: number,
  ) {}

  /** The input connection, made on first use and again after it drops. */
  async get(): Promise<RfbClient> {
    if (this.disposed) throw new Error('the input connection is closed');
    if (this.client) return this.client;
    this.connecting ??= this.connect().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /**
   * The input connection if it is up; otherwise starts making it (in the background) and says none.
   * The caller then uses the live connection for this action: a one-shot process (a CLI click) does
   * not wait for a second handshake, and a long-lived one has the input connection from its next
   * action on.
   */
  ready(): RfbClient | undefined {
    if (this.client || this.disposed) return this.client;
    // After a failed attempt, a pause: a relay that cannot start must not cost an exec per action.
    if (Date.now() - this.failedAt < RETRY_AFTER_MS) return undefined;
    this.get().catch(() => (this.failedAt = Date.now()));
    return undefined;
  }

  private async connect(): Promise<RfbClient> {
    const client = await RfbClient.connect(await this.open(), { encodings: INPUT_ENCODINGS, timeoutMs: this.timeoutMs });
    if (this.disposed) {
      client.dispose();
      throw new Error('the input connection is closed');
    }
    client.onClose(() => {
      if (this.client === client) this.client = undefined;
    });
    this.client = client;
    return client;
  }

  dispose(): void {
    this.disposed = true;
    this.client?.dispose();
    this.client = undefined;
  }
}
