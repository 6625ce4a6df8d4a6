import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/expect-error.js';
import { xdotoolArgs } from './agent-actions.js';

describe('xdotoolArgs', () => {
  it('builds argv words, never a shell line', () => {
    expect(xdotoolArgs({ kind: 'click', x: 10, y: 20 })).toEqual(['mousemove', '10', '20', 'click', '1']);
    expect(xdotoolArgs({ kind: 'click', x: 1, y: 2, button: 3, double: true })).toEqual([
      'mousemove',
      '1',
      '2',
      'click',
      '--repeat',
      '2',
      '3',
    ]);
    expect(xdotoolArgs({ kind: 'move', x: 0, y: 0 })).toEqual(['mousemove', '0', '0']);
    expect(xdotoolArgs({ kind: 'scroll', x: 5, y: 6, direction: 'up' })).toEqual(['mousemove', '5', '6', 'click', '--repeat', '3', '4']);
    expect(xdotoolArgs({ kind: 'key', keys: 'ctrl+l Return' })).toEqual(['key', '--', 'ctrl+l', 'Return']);
  });

  it('passes typed text as one argument after --, whatever it contains', () => {
    const text = '$(rm -rf /); `x` "quoted" -- --help';
    expect(xdotoolArgs({ kind: 'type', text })).toEqual(['type', '--delay', '8', '--', text]);
  });

  it.each([
    [{ kind: 'click', x: -1, y: 0 }, /coordinate/],
    [{ kind: 'move', x: 1.5, y: 0 }, /coordinate/],
    [{ kind: 'key', keys: 'rm -rf /' }, /key names/],
    [{ kind: 'key', keys: '--window 0 ctrl+c' }, /key names/],
    [{ kind: 'scroll', x: 1, y: 1, direction: 'down', amount: 0 }, /1–100/],
    [{ kind: 'type', text: 'x'.repeat(10_001) }, /10000/],
  ] as const)('refuses %o', (action, msg) => {
    const err = thrown(() => xdotoolArgs(action as Parameters<typeof xdotoolArgs>[0]));
    expect(err.code).toBe('invalid_input');
    expect(err.message).toMatch(msg);
  });
});
