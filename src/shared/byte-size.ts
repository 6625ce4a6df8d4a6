/**
 * A size as people read it: binary units, one decimal under 10 (1.5 KiB, 12 MiB), whole bytes below
 * 1 KiB. The one formatter of the CLI and the window (both may import shared/).
 */
export function byteSize(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}
