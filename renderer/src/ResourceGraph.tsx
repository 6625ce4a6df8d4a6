import { useSandboxStats, type StatsHistory } from './hooks/useSandboxStats.js';
import { formatBytes } from './format-bytes.js';
import { Sparkline } from './Sparkline.js';

/** CPU as a sparkline with the latest figures beside it: in a list row (compact) or in Details. */
export function ResourceGraph({ sandbox, stats, compact = false }: { sandbox: string; stats: StatsHistory; compact?: boolean }) {
  const s = stats.latest;
  if (!s) return compact ? null : <span className="muted">{stats.error ?? 'measuring…'}</span>;
  const mem = `${formatBytes(s.memoryBytes)}${s.memoryLimitBytes && !compact ? ` of ${formatBytes(s.memoryLimitBytes)}` : ''}`;
  return (
    <span className={`resources${compact ? ' resources-compact' : ''}`} data-testid={`resources-${compact ? 'row' : 'details'}-${sandbox}`}>
      <Sparkline
        points={stats.cpu}
        max={Math.max(100, ...stats.cpu)}
        width={compact ? 48 : 160}
        height={compact ? 14 : 32}
        label={`CPU of ${sandbox}, last ${stats.cpu.length} readings`}
      />
      <span className="small" data-testid={`resources-figures-${sandbox}`}>
        {s.cpuPercent.toFixed(compact ? 0 : 1)}% · {mem}
      </span>
      {!compact && (
        <Sparkline
          points={stats.memory}
          max={s.memoryLimitBytes ?? undefined}
          width={160}
          height={32}
          label={`memory of ${sandbox}, last ${stats.memory.length} readings`}
        />
      )}
    </span>
  );
}

/** The live graph of one sandbox, measured while it runs and is shown. */
export function SandboxResources({ sandbox, running, compact = false }: { sandbox: string; running: boolean; compact?: boolean }) {
  const stats = useSandboxStats(sandbox, running);
  if (!running) return compact ? null : <span className="muted">not running</span>;
  return <ResourceGraph sandbox={sandbox} stats={stats} compact={compact} />;
}
