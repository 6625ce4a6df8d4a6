/**
 * SHA-256 of a string's UTF-8 bytes, as lowercase hex — for service-paths.ts's data-dir hash (a few
 * dozen bytes, once per CLI call). Why @noble/hashes and not `node:crypto`: loading node:crypto costs a
 * cold `sandbox-desk exec` ~6 ms of Node start-up (measured on the 2-core CI machine), about a quarter of
 * what separated the CLI from `docker exec` (issue 34), and the socket's path needs the hash before
 * anything else happens. @noble/hashes is audited, pure JS and, bundled for Node, loads no built-in
 * module (fast-exec.test.ts holds that). The test (sha256-hex.test.ts) holds it to node:crypto's answer.
 */
import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}
