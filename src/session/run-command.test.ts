import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/expect-error.js';
import { MAX_COMMAND_BYTES, validateCommand } from './run-command.js';

describe('validateCommand', () => {
  it('accepts a 1 MiB command (issue 18: --no-shell used to fail with spawn E2BIG)', () => {
    expect(() => validateCommand(`: '${'x'.repeat(1024 * 1024)}'`)).not.toThrow();
  });

  it('refuses a command past the limit as invalid_input, naming the limit', () => {
    const e = thrown(() => validateCommand('x'.repeat(MAX_COMMAND_BYTES + 1)));
    expect(e.code).toBe('invalid_input');
    expect(e.message).toBe(`command is ${MAX_COMMAND_BYTES + 1} bytes; the limit is ${MAX_COMMAND_BYTES} bytes (4 MiB)`);
    expect(e.hint).toContain('file');
  });

  it.each([[''], ['   '], ['a\0b']])('refuses %j', (c) => {
    expect(thrown(() => validateCommand(c)).code).toBe('invalid_input');
  });
});
