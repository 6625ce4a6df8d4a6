import { describe, expect, it } from 'vitest';
import { CARD_BACKGROUND, gapAt, gapCardSvg, renderGapCard, svgText } from './gap-card.js';

const T0 = Date.parse('2026-12-05T06:00:00Z');

describe('gap card', () => {
  it('a frame gets the card strictly inside a gap: its ends are recorded frames', () => {
    const gaps = [
      { from: T0 + 3000, to: T0 + 20_000 },
      { from: T0 + 30_000, to: T0 + 45_000 },
    ];
    expect(gapAt(gaps, T0 + 3000)).toBeUndefined();
    expect(gapAt(gaps, T0 + 3001)).toBe(gaps[0]);
    expect(gapAt(gaps, T0 + 19_999)).toBe(gaps[0]);
    expect(gapAt(gaps, T0 + 20_000)).toBeUndefined();
    expect(gapAt(gaps, T0 + 25_000)).toBeUndefined();
    expect(gapAt(gaps, T0 + 44_000)).toBe(gaps[1]);
  });

  it('says what, from, to and how long; a hostile label is plain text (no markup, no control characters), cut short', () => {
    const svg = gapCardSvg(1280, 800, { from: T0, to: T0 + 95_000, what: 'restored from checkpoint <b>&"x"\n\u0007' });
    expect(svg).toContain('Screen not recorded');
    expect(svg).toContain('restored from checkpoint &lt;b&gt;&amp;&quot;x&quot;');
    // eslint-disable-next-line no-control-regex
    expect(svg).not.toMatch(/[\u0000-\u001f]/);
    expect(svg).toContain('from 06:00:00 to 06:01:35 UTC on 2026-12-05 (1 min 35 s)');
    expect(gapCardSvg(1280, 800, { from: T0, to: T0 + 86_400_000, what: 'x' })).toContain(
      'from 2026-12-05 06:00:00 to 2026-12-06 06:00:00 UTC (24 h 0 min)',
    );
    expect(svgText('y'.repeat(500))).toHaveLength(90);
  });

  it('renders to raw RGBA of the frame size: the dark card with light text on it', async () => {
    const px = await renderGapCard(320, 200, { from: T0, to: T0 + 12_000, what: 'desktop not running' });
    expect(px.length).toBe(320 * 200 * 4);
    expect([...px.subarray(0, 4)]).toEqual([...CARD_BACKGROUND, 255]);
    let light = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i]! > 180 && px[i + 1]! > 180 && px[i + 2]! > 180) light++;
    // Text, not a blank card: a few hundred pixels of glyphs (on a machine with a font).
    expect(light).toBeGreaterThan(200);
  });
});
