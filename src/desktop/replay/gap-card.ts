/**
 * The card an exported video shows where the screen was not recorded (a gap between two segments:
 * the desktop stopped, restarted, or the sandbox was restored): a dark frame with what happened,
 * from and to. An export draws it instead of failing, so a recording with a gap still gives a video
 * that covers its range, and the viewer sees why the picture is missing.
 *
 * The text is laid out by sharp (libvips → librsvg, already a dependency for the replay's PNGs): it
 * renders any character a checkpoint label may hold, scaled to the frame, where a bitmap font would
 * be ASCII at one size. Without sharp (or without a font on the machine) the card is still there,
 * only plain: the gap is also listed, in words, in the export's events file.
 */

/** A gap as the export draws it: what it was and when (ms). */
export interface GapCard {
  from: number;
  to: number;
  /** e.g. "desktop not running", "sandbox restored", "not recorded". */
  what: string;
}

/** The card's background (RGB): a dark slate no desktop's frame is likely to be wholly made of. */
export const CARD_BACKGROUND = [30, 34, 46] as const;
const CARD_TEXT = '#f2f4f8';
const CARD_MUTED = '#aab2c0';

/** The gap a frame at t falls in (strictly between its ends: the ends are recorded frames), if any. */
export function gapAt<G extends { from: number; to: number }>(gaps: readonly G[], t: number): G | undefined {
  return gaps.find((g) => t > g.from && t < g.to);
}

/** A label made safe for SVG text: no control characters (invalid in XML), markup escaped, at most `max` characters. */
export function svgText(text: string, max = 90): string {
  // eslint-disable-next-line no-control-regex
  const plain = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
  const cut = plain.length > max ? `${plain.slice(0, max - 1)}…` : plain;
  return cut.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** "from 06:00:00 to 06:01:35 UTC on 2026-12-05", the date written once when both ends share it. */
function fromTo(from: number, to: number): string {
  const [fd, ft] = new Date(from)
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .split('T') as [string, string];
  const [td, tt] = new Date(to)
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .split('T') as [string, string];
  return fd === td ? `from ${ft} to ${tt} UTC on ${fd}` : `from ${fd} ${ft} to ${td} ${tt} UTC`;
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 90) return `${s} s`;
  const m = Math.floor(s / 60);
  return m < 90 ? `${m} min ${s % 60} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** The card as an SVG of width × height (exported for its test: the text it carries). */
export function gapCardSvg(width: number, height: number, card: GapCard): string {
  const when = `${fromTo(card.from, card.to)} (${duration(card.to - card.from)})`;
  // Sized to the frame, and so the longest line fits its width (a glyph is about 0.6 em wide).
  const big = Math.max(8, Math.round(Math.min(height / 12, width / 22)));
  const longest = Math.max(when.length, Math.min(card.what.length, 90));
  const small = Math.max(6, Math.min(Math.round(big * 0.6), Math.floor((width * 0.92) / (longest * 0.6))));
  const cx = Math.round(width / 2);
  const cy = Math.round(height / 2);
  const [r, g, b] = CARD_BACKGROUND;
  const lines = [
    { y: cy - Math.round(big * 0.9), size: big, fill: CARD_TEXT, weight: 'bold', text: 'Screen not recorded' },
    { y: cy + Math.round(big * 0.4), size: small, fill: CARD_TEXT, weight: 'normal', text: card.what },
    { y: cy + Math.round(big * 0.4 + small * 1.6), size: small, fill: CARD_MUTED, weight: 'normal', text: when },
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">`,
    `<rect width="${width}" height="${height}" fill="rgb(${r},${g},${b})"/>`,
    ...lines.map(
      (l) =>
        `<text x="${cx}" y="${l.y}" text-anchor="middle" font-family="DejaVu Sans, Liberation Sans, Arial, sans-serif" font-size="${l.size}" font-weight="${l.weight}" fill="${l.fill}">${svgText(l.text)}</text>`,
    ),
    '</svg>',
  ].join('');
}

type Sharp = (typeof import('sharp'))['default'];
let sharpLoad: Promise<Sharp | null> | undefined;

/** The card as raw RGBA pixels, width × height × 4 bytes (what the export feeds ffmpeg). */
export async function renderGapCard(width: number, height: number, card: GapCard): Promise<Buffer> {
  sharpLoad ??= import('sharp').then(
    (m) => m.default,
    () => null,
  );
  const sharp = await sharpLoad;
  if (sharp) {
    try {
      const { data, info } = await sharp(Buffer.from(gapCardSvg(width, height, card)))
        .ensureAlpha()
        .raw()
        .toBuffer({ resolveWithObject: true });
      if (info.width === width && info.height === height && info.channels === 4) return data;
    } catch {
      /* a broken librsvg: the plain card below */
    }
  }
  return plainCard(width, height);
}

/** The card without text. */
function plainCard(width: number, height: number): Buffer {
  const out = Buffer.alloc(width * height * 4);
  const [r, g, b] = CARD_BACKGROUND;
  for (let i = 0; i < out.length; i += 4) {
    out[i] = r;
    out[i + 1] = g;
    out[i + 2] = b;
    out[i + 3] = 255;
  }
  return out;
}
