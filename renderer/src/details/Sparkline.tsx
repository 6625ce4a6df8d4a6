/**
 * A small live graph as plain SVG: the points scaled to the box, the newest at the right. No chart
 * library: a polyline is all a row-sized trend needs.
 */
export function Sparkline({
  points,
  max,
  width = 64,
  height = 16,
  label,
  testId,
}: {
  points: number[];
  /** The top of the scale; default: the largest point (at least 1). */
  max?: number;
  width?: number;
  height?: number;
  label: string;
  testId?: string;
}) {
  const top = Math.max(max ?? Math.max(...points, 1), 1e-9);
  const n = points.length;
  const xy = points.map((p, i) => {
    const x = n === 1 ? width : (i / (n - 1)) * width;
    const y = height - 1 - (Math.min(Math.max(p, 0), top) / top) * (height - 2);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  return (
    <svg
      className="sparkline"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={label}
      data-testid={testId}
    >
      {n > 0 && <polyline points={xy.join(' ')} fill="none" stroke="currentColor" strokeWidth="1.5" strokeLinejoin="round" />}
    </svg>
  );
}
