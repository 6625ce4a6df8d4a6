import { ANSWER_ENVELOPE_BYTES, ANSWER_MAX_BYTES } from '../exec/output-fit.js';

/**
 * The sizes the MCP transports really carry. The SDK's stdio client buffers at most 10 MiB per
 * message (above that it drops the connection), so no message we send or accept is above 8 MiB,
 * over stdio and HTTP alike. Files travel in chunks by offset: at most 4 MiB up (base64: 5.6 MB), 2 MiB down.
 */
export const MCP_MESSAGE_MAX_BYTES = ANSWER_MAX_BYTES;
/** The most bytes one write_file takes. */
export const FILE_CHUNK_MAX_BYTES = 4 * 1024 * 1024;
/**
 * The most bytes one read_file returns: its answer carries the content twice (the text and
 * structuredContent), so a chunk is half a write's: 2 × base64(2 MiB) = 5.6 MB fits one message.
 */
export const FILE_READ_MAX_BYTES = 2 * 1024 * 1024;
/** read_file without maxBytes. */
export const FILE_READ_DEFAULT_BYTES = 1024 * 1024;
/** Headroom for the envelope around a tool's text (JSON-RPC, content array, path, sizes). */
export const ENVELOPE_BYTES = ANSWER_ENVELOPE_BYTES;
const MiB = 1024 * 1024;
export const describeBytes = (n: number): string => (n % MiB === 0 ? `${n / MiB} MiB` : `${n} bytes`);
