import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ExecResult } from '../shared/exec-result.js';
import { ANSWER_MAX_BYTES, fitAnswer } from './output-fit.js';
import { streamText } from './stream-text.js';

/** A result as runCommand gives it for these bytes (nothing cut yet). */
function resultOf(stdout: Buffer, stderr: Buffer = Buffer.alloc(0)): ExecResult {
  const o = streamText(stdout, false);
  const e = streamText(stderr, false);
  return {
    exitCode: 3,
    stdout: o.text,
    stderr: e.text,
    encoding: { stdout: o.encoding, stderr: e.encoding },
    cwd: '/tmp/here',
    cwdObserved: true,
    startCwd: '/tmp',
    cwdSource: 'session',
    warnings: [],
    deniedCount: 0,
    mode: 'shell',
    timedOut: false,
    interrupted: false,
    truncated: { stdout: false, stderr: false },
    durationMs: 1,
    queuedMs: 0,
    session: 'default',
  };
}

/** The MCP answer's size: the result twice, as structuredContent and as (pretty) JSON text. */
const mcpSize = (r: object): number =>
  Buffer.byteLength(JSON.stringify({ content: [{ type: 'text', text: JSON.stringify(r, null, 2) }], structuredContent: r }));
const apiSize = (r: object): number => Buffer.byteLength(JSON.stringify(r));
const MAX = ANSWER_MAX_BYTES - 64 * 1024;

describe('fitAnswer: an over-large result keeps its exit code and cwd and says what was cut', () => {
  it('1.5 MB of NULs (6 bytes each in JSON, 13 in the MCP answer) fits the MCP message, most of it kept', () => {
    const nuls = Buffer.alloc(1_500_000);
    const before = resultOf(nuls);
    expect(mcpSize(before)).toBeGreaterThan(ANSWER_MAX_BYTES);
    const r = fitAnswer(before, { stdout: nuls, stderr: Buffer.alloc(0) }, { maxBytes: MAX, copies: 2, size: mcpSize });
    expect(mcpSize(r)).toBeLessThanOrEqual(MAX);
    expect(r).toMatchObject({ exitCode: 3, cwd: '/tmp/here', cwdObserved: true, truncated: { stdout: true, stderr: false } });
    expect(r.stdoutTruncated).toEqual({ keptBytes: r.stdout.length, totalBytes: 1_500_000 });
    // Cut close to the limit, not to nothing.
    expect(r.stdout.length).toBeGreaterThan(500_000);
    expect(r.stdout).toBe('\0'.repeat(r.stdout.length));
    expect(r.warnings.map((w) => w.code)).toEqual(['output_truncated']);
    expect(r.warnings[0]!.message).toContain(`stdout kept ${r.stdout.length} of 1500000 bytes`);
  });

  it('binary output on both streams (base64) fits a single-copy API answer; both say what they kept', () => {
    const out = randomBytes(5 * 1024 * 1024);
    const err = randomBytes(4 * 1024 * 1024);
    const r = fitAnswer(resultOf(out, err), { stdout: out, stderr: err }, { maxBytes: MAX, copies: 1, size: apiSize });
    expect(apiSize(r)).toBeLessThanOrEqual(MAX);
    expect(r.encoding).toEqual({ stdout: 'base64', stderr: 'base64' });
    const keptOut = Buffer.from(r.stdout, 'base64');
    const keptErr = Buffer.from(r.stderr, 'base64');
    expect(keptOut.equals(out.subarray(0, keptOut.length))).toBe(true);
    expect(keptErr.equals(err.subarray(0, keptErr.length))).toBe(true);
    expect(r.stdoutTruncated).toEqual({ keptBytes: keptOut.length, totalBytes: out.length });
    expect(r.stderrTruncated).toEqual({ keptBytes: keptErr.length, totalBytes: err.length });
    // Together they use most of the room: base64 is 4/3, so > 5.5 MB of 8 MiB.
    expect(keptOut.length + keptErr.length).toBeGreaterThan(5_500_000);
  });

  it('a small stream stays whole beside a large one', () => {
    const out = Buffer.alloc(3_000_000, 0x61);
    const err = Buffer.from('oops\n');
    const r = fitAnswer(resultOf(out, err), { stdout: out, stderr: err }, { maxBytes: 2_000_000, copies: 1, size: apiSize });
    expect(r.stderr).toBe('oops\n');
    expect(r.stderrTruncated).toBeUndefined();
    expect(r.truncated.stderr).toBe(false);
    expect(apiSize(r)).toBeLessThanOrEqual(2_000_000);
  });

  it('a multi-byte character is never split: the text stays UTF-8 and counts only whole characters', () => {
    const out = Buffer.from('é'.repeat(600_000));
    const r = fitAnswer(resultOf(out), { stdout: out, stderr: Buffer.alloc(0) }, { maxBytes: 1_000_001, copies: 1, size: apiSize });
    expect(r.encoding.stdout).toBe('utf8');
    expect(r.stdout).toBe('é'.repeat(r.stdout.length));
    expect(r.stdoutTruncated!.keptBytes).toBe(Buffer.byteLength(r.stdout));
  });

  it('a result that fits is returned as it is', () => {
    const r = resultOf(Buffer.from('hi\n'));
    expect(fitAnswer(r, { stdout: Buffer.from('hi\n'), stderr: Buffer.alloc(0) }, { maxBytes: MAX, copies: 2, size: mcpSize })).toBe(r);
  });

  it('an earlier cut at maxOutputBytes keeps the total the command printed', () => {
    const kept = Buffer.alloc(2_000_000);
    const r0 = {
      ...resultOf(kept),
      truncated: { stdout: true, stderr: false },
      stdoutTruncated: { keptBytes: 2_000_000, totalBytes: 9_000_000 },
    };
    const r = fitAnswer(r0, { stdout: kept, stderr: Buffer.alloc(0) }, { maxBytes: MAX, copies: 2, size: mcpSize });
    expect(r.stdoutTruncated.totalBytes).toBe(9_000_000);
    expect(r.stdoutTruncated.keptBytes).toBeLessThan(2_000_000);
  });
});
