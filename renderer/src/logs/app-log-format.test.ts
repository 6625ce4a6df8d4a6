import { describe, expect, it } from 'vitest';
import { readableAppLog } from './app-log-format.js';

describe('the app log, readable', () => {
  it('time, level, message, fields — not raw JSON; other lines kept as they are', () => {
    const text = [
      '{"level":40,"time":"2026-01-01T12:04:05.123Z","pid":7,"component":"core","msg":"desktop restarted","sandbox":"a b"}',
      '{"level":30,"time":"2026-01-01T12:04:06.000Z","pid":7,"msg":"ok"}',
      'not json',
      '{"level":30,"time":"2026-01-0',
    ].join('\n');
    expect(readableAppLog(text).split('\n')).toEqual([
      '2026-01-01 12:04:05.123  WARN   desktop restarted  component=core sandbox="a b"',
      '12:04:06.000  INFO   ok',
      'not json',
      '{"level":30,"time":"2026-01-0',
    ]);
  });
});
