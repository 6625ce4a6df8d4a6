/** Warm pools as the contract shows them (issue 37; src/pool/warm-pools.ts makes them). */

/** What every sandbox of a pool is made with; two pools are the same when all four agree. */
export interface PoolTemplate {
  image: string;
  cpus: number | null;
  memoryMiB: number | null;
  desktop: boolean;
}

export interface PoolView {
  key: string;
  template: PoolTemplate;
  description: string;
  size: number;
  ready: number;
  filling: number;
  /** `filling` (fewer ready than asked), `full`, `stopped` (disk full: refill stopped until `pool set`), `retrying` (the last fill failed). */
  state: 'filling' | 'full' | 'stopped' | 'retrying';
  /** Why it stopped or why the last fill failed; null when all is well. */
  warning: string | null;
  /** What its sandboxes may hold while they wait, in MiB (size × idle cap). */
  memoryMiB: number;
}

export interface PoolsView {
  memoryBudgetMiB: number;
  memoryMiB: number;
  /** True while the process answering refills (the service); a CLI's own core only claims. */
  refilling: boolean;
  pools: PoolView[];
}
