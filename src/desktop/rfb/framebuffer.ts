/**
 * The client's copy of the remote screen, as RGBA (width*height*4), which is what PNG encoding and
 * callers comparing pixels want. Decoders write into it; it knows nothing of the wire.
 */
export interface RectArea {
  x: number;
  y: number;
  width: number;
  height: number;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
/** Where unaligned rows are copied before conversion (shared: decoding is synchronous). */
let scratch = new Uint8Array(0);

export class Framebuffer {
  private pixels: Uint8Array;
  /** The same pixels as one 32-bit word each (made once per size: a view per call was most of Hextile's GC). */
  private words: Uint32Array;

  constructor(
    private w: number,
    private h: number,
  ) {
    this.pixels = blank(w, h);
    this.words = wordsOf(this.pixels);
  }

  get width(): number {
    return this.w;
  }

  get height(): number {
    return this.h;
  }

  /** The live pixels (not a copy): callers that keep them must copy. */
  get data(): Uint8Array {
    return this.pixels;
  }

  /** Throws if the area is not inside the framebuffer: a server that sends one is broken, and writing would corrupt memory. */
  checkBounds(what: string, area: RectArea): void {
    const { x, y, width, height } = area;
    if (x + width > this.w || y + height > this.h) {
      throw new Error(`RFB ${what} rect ${width}x${height}+${x}+${y} lies outside the ${this.w}x${this.h} framebuffer`);
    }
  }

  /**
   * Writes `rows` rows of `width` pixels at (x, y) from `data` (starting at `offset`) in the pixel format
   * the client asks for — 32 bpp little-endian BGRX — converting to RGBA with full alpha.
   */
  putBgrxRows(x: number, y: number, width: number, rows: number, data: Uint8Array, offset = 0): void {
    if (!LITTLE_ENDIAN) return this.putBgrxBytes(x, y, width, rows, data, offset);
    let src = data;
    let start = data.byteOffset + offset;
    if ((start & 3) !== 0) {
      // A Uint32Array view needs 4-byte alignment; a stream whose messages shifted the pixels off it is
      // copied once into an aligned scratch buffer (a memcpy) rather than taken byte by byte.
      const n = width * rows * 4;
      if (scratch.length < n) scratch = new Uint8Array(n);
      scratch.set(data.subarray(offset, offset + n));
      src = scratch;
      start = scratch.byteOffset;
    }
    // One 32-bit read and write per pixel instead of four byte moves (about twice as fast on a full
    // 1280x800 Raw update): BGRX read little-endian is 0xXXRRGGBB; RGBA written little-endian is 0xAABBGGRR.
    const from = new Uint32Array(src.buffer, start, width * rows);
    const to = this.words;
    for (let r = 0; r < rows; r++) {
      let o = (y + r) * this.w + x;
      for (let p = r * width, end = p + width; p < end; p++, o++) {
        const v = from[p]!;
        to[o] = 0xff000000 | ((v & 0xff) << 16) | (v & 0xff00) | ((v >>> 16) & 0xff);
      }
    }
  }

  /**
   * Fills an area with one pixel given as the server sends it: 32 bpp BGRX read little-endian
   * (0xXXRRGGBB). Hextile's solid tiles and subrects are most of what it paints.
   */
  fillBgrx(x: number, y: number, width: number, height: number, bgrx: number): void {
    const r = (bgrx >>> 16) & 0xff;
    const g = (bgrx >>> 8) & 0xff;
    const b = bgrx & 0xff;
    if (!LITTLE_ENDIAN) {
      const fb = this.pixels;
      for (let row = y; row < y + height; row++) {
        for (let o = (row * this.w + x) * 4, end = o + width * 4; o < end; o += 4) {
          fb[o] = r;
          fb[o + 1] = g;
          fb[o + 2] = b;
          fb[o + 3] = 255;
        }
      }
      return;
    }
    const rgba = (0xff000000 | (b << 16) | (g << 8) | r) >>> 0;
    const to = this.words;
    for (let row = y; row < y + height; row++) {
      // A plain loop: most fills are a tile's 16 pixels or a 1-pixel subrect, too short for fill()'s call.
      for (let o = row * this.w + x, end = o + width; o < end; o++) to[o] = rgba;
    }
  }

  /** putBgrxRows byte by byte: where the machine is big-endian. */
  private putBgrxBytes(x: number, y: number, width: number, rows: number, data: Uint8Array, offset: number): void {
    const fb = this.pixels;
    for (let r = 0; r < rows; r++) {
      let o = ((y + r) * this.w + x) * 4;
      for (let p = offset + r * width * 4, end = p + width * 4; p < end; p += 4, o += 4) {
        fb[o] = data[p + 2]!;
        fb[o + 1] = data[p + 1]!;
        fb[o + 2] = data[p]!;
        fb[o + 3] = 255;
      }
    }
  }

  /** Copies an area within the framebuffer; source and destination may overlap. */
  copyRect(srcX: number, srcY: number, dst: RectArea): void {
    const stride = this.w * 4;
    const { x, y, width, height } = dst;
    const copyRow = (i: number): void => {
      const from = (srcY + i) * stride + srcX * 4;
      this.pixels.copyWithin((y + i) * stride + x * 4, from, from + width * 4);
    };
    // When moving down, copy bottom rows first so no source row is overwritten before it is read
    // (copyWithin already handles overlap within a row).
    if (y > srcY) for (let i = height - 1; i >= 0; i--) copyRow(i);
    else for (let i = 0; i < height; i++) copyRow(i);
  }

  /** New size; the overlapping top-left part is kept until the server repaints. Returns false if the size is unchanged. */
  resize(width: number, height: number): boolean {
    if (width === this.w && height === this.h) return false;
    const next = blank(width, height);
    const rowBytes = Math.min(width, this.w) * 4;
    for (let row = 0; row < Math.min(height, this.h); row++) {
      next.set(this.pixels.subarray(row * this.w * 4, row * this.w * 4 + rowBytes), row * width * 4);
    }
    this.pixels = next;
    this.words = wordsOf(next);
    this.w = width;
    this.h = height;
    return true;
  }
}

function wordsOf(pixels: Uint8Array): Uint32Array {
  return new Uint32Array(pixels.buffer, pixels.byteOffset, pixels.length >> 2);
}

function blank(width: number, height: number): Uint8Array {
  // Opaque black rather than transparent, so a screenshot taken before any update still looks like a screen.
  const fb = new Uint8Array(width * height * 4);
  for (let i = 3; i < fb.length; i += 4) fb[i] = 255;
  return fb;
}
