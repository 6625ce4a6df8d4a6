/** A duplex byte pipe: a child process's stdio, a socket, or a WebSocket adapted by the caller. */
export interface ByteTransport {
  write(chunk: Buffer): void;
  onData(listener: (chunk: Buffer) => void): void;
  onClose(listener: (err?: Error) => void): void;
  close(): void;
}

/** Adapts a readable/writable pair (e.g. `docker exec -i … socat` stdout/stdin) to a ByteTransport. */
export function transportFromStreams(readable: NodeJS.ReadableStream, writable: NodeJS.WritableStream, close: () => void): ByteTransport {
  const closeListeners: ((err?: Error) => void)[] = [];
  let closed = false;
  let closeError: Error | undefined;
  const fireClose = (err?: Error): void => {
    if (closed) return;
    closed = true;
    closeError = err;
    for (const listener of closeListeners) listener(err);
  };
  readable.on('end', () => fireClose());
  readable.on('close', () => fireClose());
  readable.on('error', (err: Error) => fireClose(err));
  // Writing to a pipe whose reader has exited raises EPIPE as an 'error' event; unhandled, it would crash.
  writable.on('error', (err: Error) => fireClose(err));
  return {
    write: (chunk) => {
      if (!closed) writable.write(chunk);
    },
    onData: (listener) => {
      readable.on('data', (chunk: Buffer | string) => listener(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk));
    },
    onClose: (listener) => {
      if (closed) queueMicrotask(() => listener(closeError));
      else closeListeners.push(listener);
    },
    close,
  };
}
