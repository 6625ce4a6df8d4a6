import type { PoolView, PoolsView } from '../../../src/shared/pool-types.js';

/** A pool's state in words: the count beside it says how many are ready, this says what happens next. */
const STATE_LABEL: Record<PoolView['state'], string> = {
  full: 'full',
  filling: 'filling',
  stopped: 'stopped',
  retrying: 'retrying',
};

/**
 * The warm pools (issue 37) at the foot of the sandbox list: per pool its template, how many sandboxes
 * wait ready of its size, its state, and a warning when it stopped (a full disk: creates go cold until
 * `pool set`) or its last refill failed. The pooled sandboxes themselves are nobody's yet, so they are
 * not rows of the list. Hidden while no pool is configured (the default). The App polls the pools (it
 * also needs them for a create's notice) and hands the view in.
 */
export function PoolSection({ view }: { view: PoolsView | undefined }) {
  if (!view || view.pools.length === 0) return null;
  return (
    <section className="pool-section" aria-label="Warm pools" data-testid="pool-section">
      <div className="pool-section-head small">
        <span className="sidebar-title">Warm pools</span>
        <span className="muted" title="what the pools may hold while they wait, of pools.memoryBudgetMiB">
          {view.memoryMiB} / {view.memoryBudgetMiB} MiB
        </span>
      </div>
      {!view.refilling && (
        <div className="muted small" data-testid="pool-not-refilling">
          not refilled here: the service refills
        </div>
      )}
      <ul className="pool-list">
        {view.pools.map((p) => (
          <li key={p.key} className="pool-row small" data-testid={`pool-${p.key}`} title={p.warning ?? p.description}>
            <div className="sandbox-row-line">
              <span className="ellipsis">{p.description}</span>
              <span className={`state state-pool-${p.state}`} data-testid={`pool-count-${p.key}`}>
                {p.ready}/{p.size} ready
              </span>
            </div>
            <div className="muted" data-testid={`pool-state-${p.key}`}>
              {STATE_LABEL[p.state]}
              {p.filling > 0 && ` · ${p.filling} being made`}
            </div>
            {p.warning && (
              <div className="pool-warning" role="status" data-testid={`pool-warning-${p.key}`}>
                {p.state === 'stopped' ? 'stopped: ' : ''}
                {p.warning}
              </div>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
