// Preload (sandboxed, CommonJS): exposes exactly one function to the page.
import { contextBridge, ipcRenderer } from 'electron';

contextBridge.exposeInMainWorld('sandboxDesk', {
  invoke: (method: string, params?: unknown): Promise<unknown> => ipcRenderer.invoke('sandbox-desk:invoke', method, params),
});
