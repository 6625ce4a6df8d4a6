import RFB from '@novnc/novnc';
import { useEffect, useRef } from 'react';
import { describeError } from './api-client.js';
import { useApi } from './api-context.js';
import { rfbSettings, type ScreenMode } from './screen-view-mode.js';

declare global {
  interface Window {
    /** For end-to-end tests: true while the noVNC connection is up. */
    __sdeskScreenConnected?: boolean;
  }
}

export type ScreenLink =
  { state: 'connecting'; attempt: number } | { state: 'connected' } | { state: 'retrying'; inMs: number; why: string };

interface Props {
  sandbox: string;
  viewerId: string;
  viewOnly: boolean;
  /** How the remote desktop meets the pane (see screen-view-mode.ts). */
  mode: ScreenMode;
  onLink: (link: ScreenLink) => void;
  /** The viewer id the server put in the ticket (the one the lease must name). */
  onViewerId: (id: string) => void;
}

const MAX_BACKOFF_MS = 10_000;
/** Longer than the server's lease re-read (250 ms), so a resize sent on taking control is not taken for a view-only one. */
const GATE_SETTLE_MS = 600;

/**
 * The remote screen: noVNC on a single-use ticket. Every (re)connect asks for a fresh ticket, with
 * the same viewer id, so a viewer who held control keeps it across a dropped link. Backoff doubles
 * from 0.5 s to 10 s and resets once connected.
 */
export function VncScreen({ sandbox, viewerId, viewOnly, mode, onLink, onViewerId }: Props) {
  const api = useApi();
  const target = useRef<HTMLDivElement>(null);
  const rfbRef = useRef<RFB | null>(null);
  const viewOnlyRef = useRef(viewOnly);
  viewOnlyRef.current = viewOnly;
  const modeRef = useRef(mode);
  modeRef.current = mode;
  const callbacks = useRef({ onLink, onViewerId });
  callbacks.current = { onLink, onViewerId };

  useEffect(() => {
    let disposed = false;
    let attempt = 0;
    let timer: ReturnType<typeof setTimeout> | null = null;

    const retry = (why: string) => {
      if (disposed) return;
      const inMs = Math.min(MAX_BACKOFF_MS, 500 * 2 ** attempt);
      attempt += 1;
      callbacks.current.onLink({ state: 'retrying', inMs, why });
      timer = setTimeout(() => void connect(), inMs);
    };

    const connect = async () => {
      timer = null;
      callbacks.current.onLink({ state: 'connecting', attempt });
      let url: string;
      try {
        const grant = await api.call('screenTicket', { sandbox, viewerId });
        url = grant.url;
        callbacks.current.onViewerId(grant.viewerId);
      } catch (err) {
        return retry(describeError(err).message);
      }
      if (disposed || !target.current) return;
      let rfb: RFB;
      try {
        rfb = new RFB(target.current, url, { shared: true });
      } catch (err) {
        return retry(describeError(err).message);
      }
      rfb.viewOnly = viewOnlyRef.current;
      applyMode(rfb, modeRef.current, viewOnlyRef.current);
      rfb.background = 'transparent';
      rfb.addEventListener('connect', () => {
        attempt = 0;
        window.__sdeskScreenConnected = true;
        callbacks.current.onLink({ state: 'connected' });
      });
      rfb.addEventListener('disconnect', (e) => {
        if (rfbRef.current === rfb) rfbRef.current = null;
        window.__sdeskScreenConnected = false;
        const clean = (e as CustomEvent<{ clean: boolean }>).detail?.clean;
        retry(clean ? 'the screen stream closed' : 'the connection was lost');
      });
      rfb.addEventListener('securityfailure', (e) => {
        const reason = (e as CustomEvent<{ reason?: string }>).detail?.reason;
        callbacks.current.onLink({ state: 'retrying', inMs: 0, why: `security failure${reason ? `: ${reason}` : ''}` });
      });
      rfbRef.current = rfb;
    };

    void connect();
    return () => {
      disposed = true;
      if (timer) clearTimeout(timer);
      // A clean close: the server hands control back when the holder leaves on purpose.
      rfbRef.current?.disconnect();
      rfbRef.current = null;
      window.__sdeskScreenConnected = false;
    };
  }, [api, sandbox, viewerId]);

  // Taking control in `resize` mode asks for the pane's size then (noVNC asks only when not view-only) —
  // after a moment: the server's input gate re-reads the lease every 250 ms (stream-server.ts) and
  // drops a SetDesktopSize it still takes for a view-only viewer's, and noVNC sends no other resize
  // until that one is answered.
  useEffect(() => {
    const rfb = rfbRef.current;
    if (!rfb) return;
    rfb.viewOnly = viewOnly;
    if (viewOnly || mode !== 'resize') return applyMode(rfb, mode, viewOnly);
    applyMode(rfb, mode, true);
    const t = setTimeout(() => {
      if (rfbRef.current) applyMode(rfbRef.current, mode, false);
    }, GATE_SETTLE_MS);
    return () => clearTimeout(t);
  }, [viewOnly, mode]);

  return (
    <div ref={target} className={`vnc-screen mode-${mode}${viewOnly ? ' view-only' : ''}`} data-testid="vnc-screen" data-mode={mode} />
  );
}

function applyMode(rfb: RFB, mode: ScreenMode, viewOnly: boolean): void {
  const want = rfbSettings(mode, viewOnly);
  rfb.clipViewport = want.clipViewport;
  rfb.scaleViewport = want.scaleViewport;
  // Set even when unchanged: setting it true is what makes noVNC send SetDesktopSize now.
  rfb.resizeSession = want.resizeSession;
}
