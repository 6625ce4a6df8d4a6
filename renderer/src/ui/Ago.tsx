import { useNow } from '../hooks/useNow.js';
import { ago } from './format.js';

/** "41 s ago" that keeps counting, on the shared clock (hooks/useNow.ts). */
export function Ago({ iso }: { iso: string | null }) {
  const now = useNow();
  return <>{ago(iso, now)}</>;
}
