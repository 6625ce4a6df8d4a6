import { describe, it, expect } from 'vitest';
import { seededRandom as rng } from '../shared/test/seeded-random.js';
import { decodeFramePath, FrameSplitter, MAX_FRAME, type Frame } from './frame-splitter.js';

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

    it('keeps spaces, colons and non-ASCII in a frame path (byte for byte, read with decodeFramePath)', () => {
      const c = collect();
      c.splitter.push(frame('S', '7', 'missing', '/tmp/ä ö:1:2'));
      expect(c.frames[0]!.fields.slice(0, 3)).toEqual(['S', '7', 'missing']);
      expect(decodeFramePath(c.frames[0]!.fields[3]!)).toBe('/tmp/ä ö:1:2');
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
      const s = new FrameSplitter(
        (b) => chunks.push(Buffer.from(b)),
        (f) => frames.push(f),
      );
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

  describe('protocol errors never throw: the bytes become payload and the framing is reported broken', () => {
    function collectBroken() {
      const chunks: Buffer[] = [];
      const frames: Frame[] = [];
      const broken: string[] = [];
      const splitter = new FrameSplitter(
        (c) => chunks.push(Buffer.from(c)),
        (f) => frames.push(f),
        (why) => broken.push(why),
      );
      splitter.expect(NONCE);
      return { splitter, frames, broken, payload: () => Buffer.concat(chunks) };
    }

    it('hands on an unterminated frame-shaped line past the limit (issue 18: the 20000-char line)', () => {
      const c = collectBroken();
      const line = `${NONCE}\n` + 'a'.repeat(20_000);
      const huge = `${NONCE}:E:0:ok:/` + 'a'.repeat(MAX_FRAME + 10);
      expect(() => {
        c.splitter.push(Buffer.from(line));
        c.splitter.push(Buffer.from(huge));
        c.splitter.push(frame('E', '0', 'ok', '/after'));
      }).not.toThrow();
      c.splitter.end();
      expect(c.payload().toString()).toBe(line + huge);
      expect(c.broken.length).toBeGreaterThan(0);
      expect(c.frames.map((f) => f.fields)).toEqual([['E', '0', 'ok', '/after']]);
    });

    it('treats a line that starts with the nonce but does not end with it as payload', () => {
      const c = collectBroken();
      c.splitter.push(Buffer.from(`${NONCE}:E:0:ok:/x\nmore\n`));
      c.splitter.end();
      expect(c.payload().toString()).toBe(`${NONCE}:E:0:ok:/x\nmore\n`);
      expect(c.frames).toEqual([]);
      expect(c.broken).toEqual(['a line carrying the nonce that is not a frame']);
    });

    it('treats a bare nonce line and a nonce with NULs and invalid UTF-8 as payload', () => {
      const c = collectBroken();
      const bytes = Buffer.concat([Buffer.from(`${NONCE}\n${NONCE}:`), Buffer.from([0, 0xff, 0xfe, 0xc3]), Buffer.from(`\n`)]);
      c.splitter.push(bytes);
      c.splitter.end();
      expect(c.payload().equals(bytes)).toBe(true);
      expect(c.broken.length).toBe(2);
    });

    it('reports a frame cut by the end of the stream', () => {
      const c = collectBroken();
      c.splitter.push(Buffer.from(`${NONCE}:E:0:o`));
      c.splitter.end();
      expect(c.broken).toEqual(['the stream ended inside a frame']);
    });

    it('does not report broken framing for ordinary output', () => {
      const c = collectBroken();
      feedInChunks(c.splitter, STREAM, () => 7);
      expect(c.broken).toEqual([]);
      expect(c.frames.map((f) => f.fields)).toEqual(EXPECTED_FIELDS);
    });

    it('survives seeded random bytes with nonce fragments, in random chunks', () => {
      const r = rng(18);
      for (let i = 0; i < 200; i++) {
        const parts: Buffer[] = [];
        for (let j = 0; j < 20; j++) {
          const k = Math.floor(r() * 4);
          if (k === 0) parts.push(Buffer.from(Array.from({ length: Math.floor(r() * 300) }, () => Math.floor(r() * 256))));
          else if (k === 1) parts.push(Buffer.from(NONCE.slice(0, Math.floor(r() * (NONCE.length + 1)))));
          else if (k === 2) parts.push(Buffer.from(`${NONCE}:E:${Math.floor(r() * 300)}:ok:/`));
          else parts.push(Buffer.from('\n'));
        }
        const c = collectBroken();
        const data = Buffer.concat(parts);
        expect(() => feedInChunks(c.splitter, data, () => 1 + Math.floor(r() * 64))).not.toThrow();
        const framed = c.frames.reduce((n, f) => n + Buffer.byteLength(`${NONCE}:${f.fields.join(':')}:${NONCE}\n`), 0);
        expect(c.payload().length + framed).toBe(data.length);
      }
    });

    it('accepts a frame carrying a PATH_MAX-long path, and one three times as long', () => {
      const c = collect();
      for (const path of ['/' + 'p'.repeat(4095), '/' + 'q/'.repeat(6000) + 'r']) {
        c.splitter.push(frame('E', '0', 'ok', path));
        expect(c.frames.at(-1)!.fields).toEqual(['E', '0', 'ok', path]);
      }
    });
  });
});
