import type { ByteReader } from '../byte-reader.js';
import type { Framebuffer } from '../framebuffer.js';
import type { Decoder, Rect } from './decoder.js';

/** Bytes per pixel in the format the client asks for (32 bpp BGRX). */
const BPP = 4;
const TILE = 16;

/** The tile header's bits (RFC 6143 §7.7.4). */
const Sub = {
  Raw: 1,
  BackgroundSpecified: 2,
  ForegroundSpecified: 4,
  AnySubrects: 8,
  SubrectsColoured: 16,
} as const;

/**
 * Hextile (RFC 6143 §7.7.4): the rect in 16x16 tiles, left to right, top to bottom; each tile raw or a
 * background fill plus subrects. Why it is what the live connection asks for: every rect is
 * self-contained (no zlib stream spanning the connection, unlike ZRLE or Tight), so a recorded update
 * still decodes on its own at a seek; and a screen of flat colours — a desktop, a page — comes in a
 * few bytes per tile instead of 1 KiB raw, which is what the exec relay and the recorder would
 * otherwise move (3.5 MB per full 1280x800 update).
 *
 * By hand like the other decoders here: noVNC's Hextile decoder draws into its browser Display, and no
 * maintained Node RFB library decodes into a framebuffer of our own.
 *
 * A tile is applied only when all of its bytes are there (the header says how many), so a tile split
 * across reads decodes the same as a whole one. The background and foreground carry over from tile to
 * tile within one rect (a Raw tile leaves them as they were), as TigerVNC's own decoder keeps them.
 */
export class HextileDecoder implements Decoder {
  /** Tiles of the current rect still to come; 0 between rects. */
  private tilesLeft = 0;
  private tilesX = 0;
  private background = 0;
  private foreground = 0;

  decodeRect(reader: ByteReader, rect: Rect, fb: Framebuffer): boolean {
    if (this.tilesLeft === 0) {
      fb.checkBounds('Hextile', rect);
      if (rect.width === 0 || rect.height === 0) return true;
      this.tilesX = Math.ceil(rect.width / TILE);
      this.tilesLeft = this.tilesX * Math.ceil(rect.height / TILE);
      this.background = 0;
      this.foreground = 0;
    }
    const total = this.tilesX * Math.ceil(rect.height / TILE);
    while (this.tilesLeft > 0) {
      if (!reader.has(1)) return false;
      const sub = reader.peekU8();
      const index = total - this.tilesLeft;
      const tx = rect.x + (index % this.tilesX) * TILE;
      const ty = rect.y + Math.floor(index / this.tilesX) * TILE;
      const tw = Math.min(TILE, rect.x + rect.width - tx);
      const th = Math.min(TILE, rect.y + rect.height - ty);
      const length = tileLength(reader, sub, tw, th);
      if (length === null || !reader.has(length)) return false;
      const tile = reader.readBytes(length);
      this.applyTile(tile, sub, tx, ty, tw, th, fb);
      this.tilesLeft--;
    }
    return true;
  }

  private applyTile(tile: Buffer, sub: number, tx: number, ty: number, tw: number, th: number, fb: Framebuffer): void {
    if (sub & Sub.Raw) {
      fb.putBgrxRows(tx, ty, tw, th, tile, 1);
      return;
    }
    let at = 1;
    if (sub & Sub.BackgroundSpecified) {
      this.background = tile.readUInt32LE(at);
      at += BPP;
    }
    if (sub & Sub.ForegroundSpecified) {
      this.foreground = tile.readUInt32LE(at);
      at += BPP;
    }
    fb.fillBgrx(tx, ty, tw, th, this.background);
    if (!(sub & Sub.AnySubrects)) return;
    const count = tile[at++]!;
    const coloured = (sub & Sub.SubrectsColoured) !== 0;
    for (let i = 0; i < count; i++) {
      let colour = this.foreground;
      if (coloured) {
        colour = tile.readUInt32LE(at);
        at += BPP;
      }
      const xy = tile[at++]!;
      const wh = tile[at++]!;
      const sx = xy >> 4;
      const sy = xy & 0x0f;
      const sw = (wh >> 4) + 1;
      const sh = (wh & 0x0f) + 1;
      if (sx + sw > tw || sy + sh > th) {
        throw new Error(`Hextile subrect ${sw}x${sh}+${sx}+${sy} lies outside its ${tw}x${th} tile at ${tx},${ty}`);
      }
      fb.fillBgrx(tx + sx, ty + sy, sw, sh, colour);
    }
  }
}

/** The whole tile's length from its header, or null while the subrect count is not there yet. */
function tileLength(reader: ByteReader, sub: number, tw: number, th: number): number | null {
  if (sub > 31) throw new Error(`Hextile tile header ${sub} has bits no encoding defines`);
  if (sub & Sub.Raw) return 1 + tw * th * BPP;
  let length = 1;
  if (sub & Sub.BackgroundSpecified) length += BPP;
  if (sub & Sub.ForegroundSpecified) length += BPP;
  if (!(sub & Sub.AnySubrects)) return length;
  if (!reader.has(length + 1)) return null;
  const count = reader.peekU8(length);
  return length + 1 + count * ((sub & Sub.SubrectsColoured ? BPP : 0) + 2);
}
