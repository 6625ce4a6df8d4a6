/** The worker thread of process-lookup-thread.ts: answers each lookup with process-of-connection.ts. */
import { parentPort } from 'node:worker_threads';
import { processOfPort } from './process-of-connection.js';

parentPort?.on('message', (ask: { id: number; initPid: number; port: number; remotePort?: number }) => {
  void processOfPort(ask.initPid, ask.port, { remotePort: ask.remotePort })
    .catch(() => null)
    .then((found) => parentPort?.postMessage({ id: ask.id, found }));
});
