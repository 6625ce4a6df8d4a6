import { describe, expect, it } from 'vitest';
import { CastFeeder, parseCast } from './cast.js';

const cast = [
  JSON.stringify({ version: 2, width: 80, height: 24, timestamp: 1000 }),
  JSON.stringify([0.5, 'o', '$ cd /tmp/proj\r\n']),
  JSON.stringify([1.0, 'r', '100x30']),
  JSON.stringify([2.0, 'o', '$ pwd\r\n/tmp/proj\r\n']),
  '[3.0, "o", "cut mid-li',
].join('\n');

describe('asciicast v2 for the replay terminal', () => {
  it('parses the header and the events, skipping a line cut by a crash', () => {
    const c = parseCast(cast);
    expect(c.header).toMatchObject({ version: 2, width: 80, height: 24 });
    expect(c.originMs).toBe(1_000_000);
    expect(c.events.map((e) => e.t)).toEqual([500, 1000, 2000]);
  });

  it('refuses what is not asciicast v2, saying so', () => {
    expect(() => parseCast('hello')).toThrow(/first line is not a JSON header/);
    expect(() => parseCast('{"version":1}')).toThrow(/not an asciicast v2 file \(version 1\)/);
  });

  it('without a timestamp the fallback origin is t = 0', () => {
    expect(parseCast('{"version":2,"width":80,"height":24}', 42).originMs).toBe(42);
  });

  it('forward writes only what is new; backwards resets and writes from the start', () => {
    const f = new CastFeeder(parseCast(cast));
    expect(f.seek(1_000_000 + 100)).toEqual({ reset: false, data: '', size: null });
    expect(f.seek(1_000_000 + 1500)).toEqual({ reset: false, data: '$ cd /tmp/proj\r\n', size: { cols: 100, rows: 30 } });
    expect(f.seek(1_000_000 + 2500).data).toBe('$ pwd\r\n/tmp/proj\r\n');
    expect(f.seek(1_000_000 + 2600).data).toBe('');
    const back = f.seek(1_000_000 + 600);
    expect(back).toEqual({ reset: true, data: '$ cd /tmp/proj\r\n', size: null });
  });
});
