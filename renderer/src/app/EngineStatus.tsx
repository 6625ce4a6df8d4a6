import type { EngineInfo } from '../../../src/api/contract.js';
import { useApi } from './api-context.js';
import { formatBytes } from '../ui/format-bytes.js';
import { usePageVisible } from '../hooks/usePageVisible.js';
import { usePoll } from '../hooks/usePoll.js';

/** The container engine's state in the status line: reachable, version, disk used by images. */
export function EngineStatus() {
  const api = useApi();
  const visible = usePageVisible();
  const info = usePoll<EngineInfo>(() => api.call('engineInfo', {}), 30_000, 'engine', visible);
  const d = info.data?.docker;
  if (!d) return null;
  if (!d.reachable) {
    return (
      <span className="engine engine-down" data-testid="engine-status" title={d.error ?? undefined}>
        Docker not reachable
      </span>
    );
  }
  const disk = d.disk ? ` · images ${formatBytes(d.disk.images)}` : '';
  return (
    <span
      className="engine"
      data-testid="engine-status"
      title={`${d.endpoint ?? ''}${d.disk ? ` — containers ${formatBytes(d.disk.containers)}, volumes ${formatBytes(d.disk.volumes)}, build cache ${formatBytes(d.disk.buildCache)}` : ''}`}
    >
      Docker {d.version}
      {disk}
    </span>
  );
}
