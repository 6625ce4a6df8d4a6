import type { PoolsView } from '../../../src/shared/pool-types.js';
import { useApi } from '../app/api-context.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';

/**
 * The warm pools (issue 37) at the foot of the sandbox list: per pool its template, how many sandboxes
 * wait ready of its size, and a warning when it stopped (a full disk) or its last refill failed. The
 * pooled sandboxes themselves are nobody's yet, so they are not rows of the list. Hidden while no pool
 * is configured (the default).
 */
export function PoolSection() {
  const api = useApi();
  const poll = usePoll(() => api.call('poolList', {}), 5000, 'pools', true, { live: touches.pools });
  const view: PoolsView | undefined = poll.data;
  if (!view || view.pools.length === 0) return null;
  return (
    <section className="pool-section" aria-label="Warm pools" data-testid="pool-section">
      <div className="pool-section-head small">
        <span className="sidebar-title">Warm pools</span>
        <span className="muted" title="what the pools may hold while they wait, of pools.memoryBudgetMiB">
          {view.memoryMiB} / {view.memoryBudgetMiB} MiB
        </span>
      </div>
      <ul className="pool-list">
        {view.pools.map((p) => (
          <li key={p.key} className="pool-row small" data-testid={`pool-${p.key}`} title={p.warning ?? p.description}>
            <div className="sandbox-row-line">
              <span className="ellipsis">{p.description}</span>
              <span className={`state state-pool-${p.state}`} data-testid={`pool-count-${p.key}`}>
                {p.ready}/{p.size} ready
              </span>
            </div>
            {p.filling > 0 && <div className="muted">{p.filling} being made</div>}
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
