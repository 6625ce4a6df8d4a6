import { describe, expect, it } from 'vitest';
import { HTTP_STATUS, statusFor } from './http-status.js';

describe('error code → HTTP status', () => {
  it('maps every code to a 4xx or 5xx status', () => {
    for (const [code, status] of Object.entries(HTTP_STATUS)) expect(status >= 400 && status < 600, code).toBe(true);
  });

  it('bad input is 400, missing things 404, conflicts 409, an unknown code 500', () => {
    expect(statusFor('invalid_input')).toBe(400);
    expect(statusFor('sandbox_missing')).toBe(404);
    expect(statusFor('human_has_control')).toBe(409);
    expect(statusFor('engine_unreachable')).toBe(503);
    expect(statusFor('no_such_code')).toBe(500);
    expect(statusFor('toString')).toBe(500);
  });
});
