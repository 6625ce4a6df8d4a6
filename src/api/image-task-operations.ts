import type { ImageTask } from '../shared/image-types.js';
import type { IDisposable } from '../shared/lifecycle.js';
import type { ImageTasks } from './image-tasks.js';
import type { OperationTracker, TrackedOperation } from './operation-tracker.js';

/** Image builds and pulls as tracked operations (the task list), started and ended with their tasks. */
export function trackImageTasks(tasks: ImageTasks, tracker: OperationTracker): IDisposable {
  const ops = new Map<string, TrackedOperation>();
  return tasks.onTaskChange((task: ImageTask) => {
    let op = ops.get(task.id);
    if (!op) {
      op = tracker.start(`image-${task.kind}`, task.target, null, `image-${task.id}`);
      ops.set(task.id, op);
    }
    if (task.state === 'running') {
      const last = task.events[task.events.length - 1];
      if (last) op.progress(last.text.slice(0, 300), last.step && last.total ? last.step / last.total : null);
      return;
    }
    op.end(task.state === 'succeeded' ? null : { code: task.error?.code ?? task.state, message: task.error?.message ?? task.state });
    ops.delete(task.id);
  });
}
