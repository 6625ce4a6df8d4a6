import { useSandboxStats, type StatsHistory } from '../hooks/useSandboxStats.js';
import { memoryText } from '../../../src/shared/memory-text.js';
import { formatBytes } from '../ui/format-bytes.js';
import { Sparkline } from './Sparkline.js';

/** CPU as a sparkline with the latest figures beside it: in a list row (compact) or in Details. */
export function ResourceGraph({ sandbox, stats, compact = false }: { sandbox: string; stats: StatsHistory; compact?: boolean }) {
  const s = stats.latest;
  if (!s) return compact ? null : <span className="muted">{stats.error ?? 'measuring…'}</span>;
  const cpu = (
    <Sparkline
      points={stats.cpu}
      max={Math.max(100, ...stats.cpu)}
      width={compact ? 96 : 120}
      height={compact ? 14 : 28}
      label={`CPU of ${sandbox}, last ${stats.cpu.length} readings`}
    />
  );
  if (compact) {
    return (
      <span className="resources resources-compact" data-testid={`resources-row-${sandbox}`}>
        {cpu}
        <span className="small" data-testid={`resources-figures-${sandbox}`}>
          {s.cpuPercent.toFixed(0)}% · {formatBytes(s.memoryBytes)}
        </span>
      </span>
    );
  }
  return (
    <div className="resources-grid" data-testid={`resources-details-${sandbox}`}>
      <span className="muted">CPU</span>
      {cpu}
      <span className="mono" data-testid={`resources-figures-${sandbox}`}>
        {s.cpuPercent.toFixed(1)}% of one core
      </span>
      <span className="muted">Memory</span>
      {/* Scaled to its own recent peak, so a trend shows even far below the limit. */}
      <Sparkline
        points={stats.memory}
        max={Math.max(...stats.memory) * 1.25}
        width={120}
        height={28}
        label={`memory of ${sandbox}, last ${stats.memory.length} readings`}
      />
      <span className="mono" data-testid={`resources-memory-${sandbox}`}>
        {memoryText(s, formatBytes)}
      </span>
    </div>
  );
}

/** The live graph of one sandbox, measured while it runs and is shown. */
export function SandboxResources({ sandbox, running, compact = false }: { sandbox: string; running: boolean; compact?: boolean }) {
  const stats = useSandboxStats(sandbox, running);
  if (!running) return compact ? null : <span className="muted">not running</span>;
  return <ResourceGraph sandbox={sandbox} stats={stats} compact={compact} />;
}
