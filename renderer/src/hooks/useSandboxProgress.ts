import { useApi } from '../app/api-context.js';
import { usePoll } from './usePoll.js';
import { touches } from '../events/topics.js';

/**
 * The latest step of a long operation (a VM boot, an image build) on `name`, polled while `name` is
 * set: the server keeps each sandbox's progress, so any client can show it. null until a step arrives.
 */
export function useSandboxProgress(name: string | null): { step: string; message: string; level: 'info' | 'warning' } | null {
  const api = useApi();
  const poll = usePoll(() => (name ? api.call('sandboxProgress', { name }) : Promise.resolve(null)), 1000, name ?? '', name !== null, {
    live: touches.operationOf(name ?? ''),
  });
  if (name === null) return null;
  const op = poll.data;
  return op && !op.done ? (op.events.at(-1) ?? null) : null;
}
