import { Fragment } from 'react';

/**
 * A path (or an image reference) that wraps where a person would break it: after each `/` (and `:`),
 * never in the middle of a folder's name unless that name alone is wider than the line. The text is
 * unchanged (copying it gives the path); only break opportunities (<wbr>) are added.
 */
export function PathText({ text }: { text: string }) {
  const parts = text.split(/(?<=[/:])/);
  return (
    <>
      {parts.map((p, i) => (
        <Fragment key={i}>
          {p}
          {i < parts.length - 1 && <wbr />}
        </Fragment>
      ))}
    </>
  );
}
