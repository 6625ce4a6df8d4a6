import type { z } from 'zod';
import { SandboxDeskError } from '../shared/errors.js';

/** Parses input at the boundary; a failure names the field and what was wrong with it. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
  throw new SandboxDeskError('invalid_input', `${where}${issue.message}`, {
    details: { issues: r.error.issues.map((i) => ({ path: i.path, message: i.message })) },
  });
}
