import { describe, expect, it } from 'vitest';
import { ImageTasks } from './image-tasks.js';

describe('ImageTasks', () => {
  it('records events and the result; listeners see each event as it happens', async () => {
    const tasks = new ImageTasks();
    const heard: string[] = [];
    const { task, done } = tasks.start(
      'build',
      't:1',
      async (run) => {
        run.emit({ kind: 'step', text: 'FROM x', step: 1, total: 1 });
        return { ref: 't:1', id: 'sha256:1' };
      },
      { onEvent: (e) => heard.push(e.kind) },
    );
    expect(task.state).toBe('running');
    const end = await done;
    expect(end.state).toBe('succeeded');
    expect(end.result).toEqual({ ref: 't:1', id: 'sha256:1' });
    expect(heard).toEqual(['step', 'done']);
    expect(tasks.get(task.id)).toBe(end);
  });

  it('cancel aborts the work and the task says cancelled; a failure keeps its error as data', async () => {
    const tasks = new ImageTasks();
    const { task, done } = tasks.start(
      'build',
      't:2',
      (run) => new Promise((_, reject) => run.signal.addEventListener('abort', () => reject(new Error('aborted')))),
    );
    tasks.cancel(task.id);
    expect((await done).state).toBe('cancelled');
    expect(task.error?.code).toBe('cancelled');
    const failed = await tasks.start('pull', 'x', () => Promise.reject(new Error('boom'))).done;
    expect(failed.state).toBe('failed');
    expect(failed.error?.message).toBe('boom');
  });

  it("the caller's own signal (Ctrl-C) cancels too; an unknown id is not_found", async () => {
    const tasks = new ImageTasks();
    const abort = new AbortController();
    const { done } = tasks.start(
      'build',
      't',
      (run) => new Promise((_, reject) => run.signal.addEventListener('abort', () => reject(new Error('x')))),
      {
        signal: abort.signal,
      },
    );
    abort.abort();
    expect((await done).state).toBe('cancelled');
    expect(() => tasks.get('nope')).toThrow(/no image task nope/);
  });
});
