// Preload (sandboxed, CommonJS): exposes the contract's `invoke`, the core's events, notifications and
// the person's clipboard (text) to the page.
import { contextBridge, ipcRenderer } from 'electron';
import type { ClipboardChannel, EventChannel, EventsBridgedChannel, InvokeChannel, NotifyChannel } from '../src/shared/ipc-channel.js';

// The shared channel name, spelled out: a sandboxed preload cannot require our modules at run time,
// and the type makes any other spelling a typecheck error.
const CHANNEL: InvokeChannel = 'sandbox-desk:invoke';
const EVENTS: EventChannel = 'sandbox-desk:event';
const NOTIFY: NotifyChannel = 'sandbox-desk:notify';
const BRIDGED: EventsBridgedChannel = 'sandbox-desk:events-bridged';
const CLIPBOARD: ClipboardChannel = 'sandbox-desk:clipboard';

contextBridge.exposeInMainWorld('sandboxDesk', {
  invoke: (method: string, params?: unknown): Promise<unknown> => ipcRenderer.invoke(CHANNEL, method, params),
  // The core's pushed state (the page never sees the IPC event object, only the core event), when
  // main forwards it (`eventsBridged`); otherwise the page opens /ws/events itself.
  eventsBridged: (): Promise<boolean> => ipcRenderer.invoke(BRIDGED) as Promise<boolean>,
  onEvent: (listener: (event: unknown) => void): (() => void) => {
    const handler = (_e: unknown, event: unknown) => listener(event);
    ipcRenderer.on(EVENTS, handler);
    return () => ipcRenderer.removeListener(EVENTS, handler);
  },
  notify: (title: string, body: string): void => ipcRenderer.send(NOTIFY, String(title).slice(0, 200), String(body).slice(0, 500)),
  // Text only, both ways: what the screen's cut text carries (renderer/src/person-clipboard.ts).
  clipboard: {
    readText: (): Promise<string> => ipcRenderer.invoke(CLIPBOARD, 'read') as Promise<string>,
    writeText: (text: string): Promise<void> => ipcRenderer.invoke(CLIPBOARD, 'write', String(text)) as Promise<void>,
  },
});
