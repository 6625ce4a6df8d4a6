// Preload (sandboxed, CommonJS): exposes the contract's one call, and the person's clipboard (text).
import { contextBridge, ipcRenderer } from 'electron';
import type { ClipboardChannel, InvokeChannel } from '../src/shared/ipc-channel.js';

// The shared channel name, spelled out: a sandboxed preload cannot require our modules at run time,
// and the type makes any other spelling a typecheck error.
const CHANNEL: InvokeChannel = 'sandbox-desk:invoke';
const CLIPBOARD: ClipboardChannel = 'sandbox-desk:clipboard';

contextBridge.exposeInMainWorld('sandboxDesk', {
  invoke: (method: string, params?: unknown): Promise<unknown> => ipcRenderer.invoke(CHANNEL, method, params),
  // Text only, both ways: what the screen's cut text carries (renderer/src/person-clipboard.ts).
  clipboard: {
    readText: (): Promise<string> => ipcRenderer.invoke(CLIPBOARD, 'read') as Promise<string>,
    writeText: (text: string): Promise<void> => ipcRenderer.invoke(CLIPBOARD, 'write', String(text)) as Promise<void>,
  },
});
