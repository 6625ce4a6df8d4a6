import RFB from '@novnc/novnc';
import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { overCapMessage, personClipboard, utf8Bytes } from './person-clipboard.js';
import { describeError } from '../app/api-client.js';
import { useApi } from '../app/api-context.js';
import { rfbSettings, type ScreenMode } from './screen-view-mode.js';

declare global {
  interface Window {
    /** For end-to-end tests: true while the noVNC connection is up. */
    __sdeskScreenConnected?: boolean;
    /** For end-to-end tests: the last text the sandbox copied (ServerCutText) that reached this window. */
    __sdeskLastServerClipboard?: string;
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
/** Until the ticket says otherwise: the core's default `clipboard.maxBytes`. */
const DEFAULT_CLIPBOARD_MAX = 1024 * 1024;
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
  const clipboardMax = useRef(DEFAULT_CLIPBOARD_MAX);
  const controlSince = useRef(0);
  /** The text last passed either way, so the same text is not sent back where it came from. */
  const lastClip = useRef<string | null>(null);
  const [clipNotice, setClipNotice] = useState<string | null>(null);
  const noticeTimer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const notice = (text: string) => {
    setClipNotice(text);
    if (noticeTimer.current) clearTimeout(noticeTimer.current);
    noticeTimer.current = setTimeout(() => setClipNotice(null), 6000);
  };
  const noticeRef = useRef(notice);
  noticeRef.current = notice;

  /**
   * The person's clipboard → the sandbox, when they may type there (they hold control): on entering
   * the screen, on focusing it, and when the window regains focus. The core's filter drops it from
   * anyone else anyway; over the cap it is not sent and the screen says so.
   */
  const pushClipboard = useRef(async () => {
    const rfb = rfbRef.current;
    const clip = personClipboard();
    if (!rfb || !clip || viewOnlyRef.current) return;
    // Just after taking control the server's gate may still read the old lease and drop the paste:
    // the push scheduled for when it has settled (below) does it then.
    if (Date.now() - controlSince.current < GATE_SETTLE_MS) return;
    let text: string;
    try {
      text = await clip.readText();
    } catch {
      return; // no permission (yet), or the document is not focused: try again on the next entry
    }
    if (!text || text === lastClip.current) return;
    const bytes = utf8Bytes(text);
    if (bytes > clipboardMax.current) {
      lastClip.current = text;
      return noticeRef.current(overCapMessage('to-sandbox', bytes, clipboardMax.current));
    }
    lastClip.current = text;
    rfbRef.current?.clipboardPasteFrom(text);
  });

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
        if (grant.clipboardMaxBytes) clipboardMax.current = grant.clipboardMaxBytes;
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
        void pushClipboard.current();
      });
      rfb.addEventListener('disconnect', (e) => {
        if (rfbRef.current === rfb) rfbRef.current = null;
        window.__sdeskScreenConnected = false;
        const clean = (e as CustomEvent<{ clean: boolean }>).detail?.clean;
        retry(clean ? 'the screen stream closed' : 'the connection was lost');
      });
      // The sandbox copied something (ServerCutText): onto the person's clipboard, within the cap.
      rfb.addEventListener('clipboard', (e) => {
        const text = (e as CustomEvent<{ text: string }>).detail?.text ?? '';
        const bytes = utf8Bytes(text);
        if (bytes > clipboardMax.current) return noticeRef.current(overCapMessage('from-sandbox', bytes, clipboardMax.current));
        lastClip.current = text;
        window.__sdeskLastServerClipboard = text;
        void personClipboard()
          ?.writeText(text)
          .catch(() => noticeRef.current('The sandbox copied text, but this window may not write your clipboard.'));
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

  useEffect(() => {
    const el = target.current;
    const push = () => void pushClipboard.current();
    el?.addEventListener('pointerenter', push);
    el?.addEventListener('focusin', push);
    window.addEventListener('focus', push);
    return () => {
      el?.removeEventListener('pointerenter', push);
      el?.removeEventListener('focusin', push);
      window.removeEventListener('focus', push);
      if (noticeTimer.current) clearTimeout(noticeTimer.current);
    };
  }, []);

  // Taking control is a moment the person means to work in the sandbox: bring their clipboard along —
  // after the server's input gate has seen the new lease (as for the resize below), or it drops the paste.
  useEffect(() => {
    if (viewOnly) return;
    controlSince.current = Date.now();
    const t = setTimeout(() => void pushClipboard.current(), GATE_SETTLE_MS + 50);
    return () => clearTimeout(t);
  }, [viewOnly]);

  // The screen takes or stops taking input in the same commit as the button and the lease indicator
  // change (a layout effect, not a passive one that runs a frame later): after "Give back" shows, no
  // click of the person's reaches the sandbox.
  useLayoutEffect(() => {
    if (rfbRef.current) rfbRef.current.viewOnly = viewOnly;
  }, [viewOnly]);

  // Taking control in `resize` mode asks for the pane's size then (noVNC asks only when not view-only) —
  // after a moment: the server's input gate re-reads the lease every 250 ms (stream-server.ts) and
  // drops a SetDesktopSize it still takes for a view-only viewer's, and noVNC sends no other resize
  // until that one is answered.
  useEffect(() => {
    const rfb = rfbRef.current;
    if (!rfb) return;
    if (viewOnly || mode !== 'resize') return applyMode(rfb, mode, viewOnly);
    applyMode(rfb, mode, true);
    const t = setTimeout(() => {
      if (rfbRef.current) applyMode(rfbRef.current, mode, false);
    }, GATE_SETTLE_MS);
    return () => clearTimeout(t);
  }, [viewOnly, mode]);

  return (
    <>
      <div ref={target} className={`vnc-screen mode-${mode}${viewOnly ? ' view-only' : ''}`} data-testid="vnc-screen" data-mode={mode} />
      {clipNotice && (
        <div className="clipboard-notice notice notice-warn" role="status" data-testid="clipboard-notice">
          {clipNotice}
        </div>
      )}
    </>
  );
}

function applyMode(rfb: RFB, mode: ScreenMode, viewOnly: boolean): void {
  const want = rfbSettings(mode, viewOnly);
  rfb.clipViewport = want.clipViewport;
  rfb.scaleViewport = want.scaleViewport;
  // Set even when unchanged: setting it true is what makes noVNC send SetDesktopSize now.
  rfb.resizeSession = want.resizeSession;
}
