import { describe, it, expect } from 'vitest';
import { seededRandom as rng } from '../shared/test/seeded-random.js';
import { FrameSplitter, type Frame } from './frame-splitter.js';

/** A nonce shaped like the real ones: random hex the command cannot know. */
const NONCE = 'sd9f3c2a71e04b8d';
const OTHER = 'sd0000aaaa1111bb';

/** Every byte value 0x00..0xff, twice, so the payload is binary and contains ':' and '\n'. */
const BINARY = Buffer.from([...Array(256).keys(), ...Array(256).keys()]);

function frame(...fields: string[]): Buffer {
  return Buffer.from(`${NONCE}:${fields.join(':')}:${NONCE}\n`);
}

/** The stream under test, and what the splitter must make of it. */
const STREAM = Buffer.concat([
  Buffer.from('hello\n'),
  BINARY,
  Buffer.from('no newline before the frame'),
  frame('S', '12', 'ok', '/tmp/a b'),
  Buffer.from('middle payload\n'),
  frame('E', '0', 'ok', '/x:y'),
  Buffer.from('tail'),
  frame('X'),
  Buffer.from('after'),
]);
const EXPECTED_PAYLOAD = Buffer.concat([
  Buffer.from('hello\n'),
  BINARY,
  Buffer.from('no newline before the frame'),
  Buffer.from('middle payload\n'),
  Buffer.from('tail'),
  Buffer.from('after'),
]);
const EXPECTED_FIELDS = [['S', '12', 'ok', '/tmp/a b'], ['E', '0', 'ok', '/x:y'], ['X']];

interface Collected {
  splitter: FrameSplitter;
  payload: () => Buffer;
  frames: Frame[];
}

function collect(...nonces: string[]): Collected {
  const chunks: Buffer[] = [];
  const frames: Frame[] = [];
  // Copy each payload chunk: the splitter may hand on views into its own buffers.
  const splitter = new FrameSplitter(
    (c) => chunks.push(Buffer.from(c)),
    (f) => frames.push(f),
  );
  splitter.expect(...(nonces.length ? nonces : [NONCE]));
  return { splitter, payload: () => Buffer.concat(chunks), frames };
}


function feedInChunks(splitter: FrameSplitter, data: Buffer, sizes: () => number): void {
  let at = 0;
  while (at < data.length) {
    const n = Math.max(1, sizes());
    splitter.push(data.subarray(at, at + n));
    at += n;
  }
  splitter.end();
}

describe('FrameSplitter', () => {
  describe('in one chunk', () => {
    it('hands on the payload bytes exactly, including binary bytes and text right before a frame', () => {
      const c = collect();
      c.splitter.push(STREAM);
      c.splitter.end();
      expect(c.payload().equals(EXPECTED_PAYLOAD)).toBe(true);
    });

    it('parses the frames into their fields, keeping ":" in the last field', () => {
      const c = collect();
      c.splitter.push(STREAM);
      c.splitter.end();
      expect(c.frames.map((f) => f.fields)).toEqual(EXPECTED_FIELDS);
    });

    it('reports the nonce each frame carried', () => {
      const c = collect();
      c.splitter.push(STREAM);
      expect(c.frames.every((f) => f.nonce === NONCE)).toBe(true);
    });

    it('parses an H frame into its type and pid', () => {
      const c = collect();
      c.splitter.push(frame('H', '123'));
      expect(c.frames).toEqual([{ nonce: NONCE, fields: ['H', '123'] }]);
      expect(c.payload().length).toBe(0);
    });

    it('keeps spaces, colons and non-ASCII in a frame path', () => {
      const c = collect();
      c.splitter.push(frame('S', '7', 'missing', '/tmp/ä ö:1:2'));
      expect(c.frames[0]!.fields).toEqual(['S', '7', 'missing', '/tmp/ä ö:1:2']);
    });

    it('parses frames that follow each other directly', () => {
      const c = collect();
      c.splitter.push(Buffer.concat([frame('E', '3', 'gone', '/w'), frame('X')]));
      expect(c.frames.map((f) => f.fields)).toEqual([['E', '3', 'gone', '/w'], ['X']]);
      expect(c.payload().length).toBe(0);
    });
  });

  describe('across chunk boundaries', () => {
    it('gives the same payload and frames when fed one byte at a time', () => {
      const c = collect();
      feedInChunks(c.splitter, STREAM, () => 1);
      expect(c.payload().equals(EXPECTED_PAYLOAD)).toBe(true);
      expect(c.frames.map((f) => f.fields)).toEqual(EXPECTED_FIELDS);
    });

    it.each([1, 2, 3, 42, 1234, 99999])('gives the same payload and frames in random chunk sizes (seed %i)', (seed) => {
      const next = rng(seed);
      const c = collect();
      feedInChunks(c.splitter, STREAM, () => Math.floor(next() * 40) + 1);
      expect(c.payload().equals(EXPECTED_PAYLOAD)).toBe(true);
      expect(c.frames.map((f) => f.fields)).toEqual(EXPECTED_FIELDS);
    });

    it('hands on payload before the stream ends, holding back at most a possible nonce prefix', () => {
      const c = collect();
      c.splitter.push(Buffer.from('x'.repeat(100)));
      expect(c.payload().length).toBeGreaterThanOrEqual(100 - (NONCE.length - 1));
    });

    it('holds back a partial nonce at the end of a chunk and completes the frame with the next', () => {
      const c = collect();
      const data = Buffer.concat([Buffer.from('abc'), frame('X')]);
      c.splitter.push(data.subarray(0, 3 + 5));
      expect(c.frames).toEqual([]);
      expect(c.payload().toString()).not.toContain(NONCE.slice(0, 5));
      c.splitter.push(data.subarray(3 + 5));
      expect(c.frames.map((f) => f.fields)).toEqual([['X']]);
      expect(c.payload().toString()).toBe('abc');
    });
  });

  describe('markers that are not ours', () => {
    it('treats a frame with a different nonce as payload', () => {
      const c = collect();
      const fake = `${OTHER}:E:0:ok:/fake:${OTHER}\n`;
      c.splitter.push(Buffer.concat([Buffer.from(fake), frame('X')]));
      c.splitter.end();
      expect(c.payload().toString()).toBe(fake);
      expect(c.frames.map((f) => f.fields)).toEqual([['X']]);
    });

    it('treats a different-nonce frame as payload when fed byte by byte', () => {
      const c = collect();
      const fake = `${OTHER}:E:0:ok:/fake:${OTHER}\n`;
      feedInChunks(c.splitter, Buffer.from(fake), () => 1);
      expect(c.payload().toString()).toBe(fake);
      expect(c.frames).toEqual([]);
    });

    it('treats everything as payload when no nonce is expected', () => {
      const chunks: Buffer[] = [];
      const frames: Frame[] = [];
      const s = new FrameSplitter((b) => chunks.push(Buffer.from(b)), (f) => frames.push(f));
      s.push(STREAM);
      s.end();
      expect(Buffer.concat(chunks).equals(STREAM)).toBe(true);
      expect(frames).toEqual([]);
    });

    it('recognises frames of any of several expected nonces', () => {
      const c = collect(NONCE, OTHER);
      c.splitter.push(Buffer.from(`${OTHER}:H:9:${OTHER}\n${NONCE}:X:${NONCE}\n`));
      expect(c.frames).toEqual([
        { nonce: OTHER, fields: ['H', '9'] },
        { nonce: NONCE, fields: ['X'] },
      ]);
    });
  });

  describe('end()', () => {
    it('flushes held-back bytes as payload', () => {
      const c = collect();
      c.splitter.push(Buffer.from('abc' + NONCE.slice(0, 6)));
      c.splitter.end();
      expect(c.payload().toString()).toBe('abc' + NONCE.slice(0, 6));
    });

    it('flushes a frame cut short as payload', () => {
      const c = collect();
      const cut = `${NONCE}:E:0:ok:/tm`;
      c.splitter.push(Buffer.from(cut));
      expect(c.frames).toEqual([]);
      c.splitter.end();
      expect(c.payload().toString()).toBe(cut);
      expect(c.frames).toEqual([]);
    });

    it('emits nothing when nothing is held back', () => {
      const c = collect();
      c.splitter.end();
      expect(c.payload().length).toBe(0);
    });
  });

  describe('protocol errors', () => {
    it('throws when an unterminated frame grows past the limit', () => {
      const c = collect();
      expect(() => c.splitter.push(Buffer.from(`${NONCE}:E:0:ok:/` + 'a'.repeat(20 * 1024)))).toThrow(/frame too long/);
    });

    it('accepts a frame carrying a PATH_MAX-long path', () => {
      const c = collect();
      const path = '/' + 'p'.repeat(4095);
      c.splitter.push(frame('E', '0', 'ok', path));
      expect(c.frames[0]!.fields).toEqual(['E', '0', 'ok', path]);
    });
  });
});
