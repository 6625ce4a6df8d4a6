// Preload (sandboxed, CommonJS): exposes exactly one function to the page.
import { contextBridge, ipcRenderer } from 'electron';
import type { InvokeChannel } from '../src/shared/ipc-channel.js';

// The shared channel name, spelled out: a sandboxed preload cannot require our modules at run time,
// and the type makes any other spelling a typecheck error.
const CHANNEL: InvokeChannel = 'sandbox-desk:invoke';

contextBridge.exposeInMainWorld('sandboxDesk', {
  invoke: (method: string, params?: unknown): Promise<unknown> => ipcRenderer.invoke(CHANNEL, method, params),
});
