/** The worker thread of process-lookup-thread.ts: answers each lookup with process-of-connection.ts. */
import { parentPort } from 'node:worker_threads';
import { lookUp, type Ask } from './process-lookup-thread.js';

parentPort?.on('message', (ask: Ask) => {
  void lookUp(ask)
    .catch(() => null)
    .then((found) => parentPort?.postMessage({ id: ask.id, found }));
});

// Loaded: lookups may come here now (process-lookup-thread.ts runs them inline until this arrives).
parentPort?.postMessage({ ready: true });
