/**
 * A Hextile encoder for tests (the product only decodes): encodes a rect of BGRX pixels tile by tile,
 * each tile in the mode `modeOf` picks where it can — so one rect exercises raw tiles, solid tiles,
 * background carried over from the tile before, one-colour (foreground) subrects and coloured subrects.
 */
export type TileMode = 'raw' | 'fill' | 'subrects';

/** pixels: width*height BGRX values read little-endian (0xXXRRGGBB), row by row. */
export function hextileEncode(
  width: number,
  height: number,
  pixels: readonly number[],
  modeOf: (tile: number) => TileMode = () => 'subrects',
): Buffer {
  const out: number[] = [];
  const u32 = (v: number) => out.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  let bg: number | null = null;
  let fg: number | null = null;
  let tile = 0;
  for (let ty = 0; ty < height; ty += 16) {
    for (let tx = 0; tx < width; tx += 16, tile++) {
      const tw = Math.min(16, width - tx);
      const th = Math.min(16, height - ty);
      const px: number[] = [];
      for (let y = 0; y < th; y++) for (let x = 0; x < tw; x++) px.push(pixels[(ty + y) * width + tx + x]!);
      const counts = new Map<number, number>();
      for (const p of px) counts.set(p, (counts.get(p) ?? 0) + 1);
      const mode = modeOf(tile);
      if (mode === 'raw' || (mode === 'fill' && counts.size > 1)) {
        out.push(1);
        for (const p of px) u32(p);
        continue; // a raw tile leaves bg and fg as they were
      }
      const tileBg = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
      const others = px.map((p, i) => [p, i] as const).filter(([p]) => p !== tileBg);
      const colours = new Set(others.map(([p]) => p));
      const mono = colours.size === 1;
      let sub = 0;
      if (tileBg !== bg) sub |= 2;
      if (mono && [...colours][0] !== fg) sub |= 4;
      if (others.length) sub |= 8 | (mono ? 0 : 16);
      out.push(sub);
      if (sub & 2) u32((bg = tileBg));
      if (sub & 4) u32((fg = [...colours][0]!));
      if (others.length) {
        out.push(others.length);
        for (const [p, i] of others) {
          if (!mono) u32(p);
          out.push(((i % tw) << 4) | Math.floor(i / tw), 0); // a 1x1 subrect
        }
      }
    }
  }
  return Buffer.from(out);
}
