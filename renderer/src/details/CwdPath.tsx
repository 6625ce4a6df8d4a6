/** Splits a path before its last segment: the head may be cut in its middle, the tail (where you are) stays whole. */
export function splitForMiddleEllipsis(path: string): { head: string; tail: string } {
  const at = path.lastIndexOf('/', path.length - 2);
  if (at <= 0) return { head: '', tail: path };
  return { head: path.slice(0, at + 1), tail: path.slice(at + 1) };
}

/**
 * A working directory that stays readable in a narrow pane: the start of the path shrinks with an
 * ellipsis (CSS, so it follows the width) while the last folder stays whole — a middle ellipsis —
 * and the full path is the title.
 */
export function CwdPath({ path, testId }: { path: string; testId?: string }) {
  const { head, tail } = splitForMiddleEllipsis(path);
  return (
    <span className="mono cwd cwd-path" title={path} data-testid={testId}>
      {head && <span className="cwd-head">{head}</span>}
      <span className="cwd-tail">{tail}</span>
    </span>
  );
}
