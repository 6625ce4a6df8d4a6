import { describe, expect, it } from 'vitest';
import { BuildProgress, JsonLines, pullEvent, type EngineMessage } from './build-progress.js';
import { buildFailure } from './docker-images.js';

type Ev = Parameters<ConstructorParameters<typeof BuildProgress>[0]>[0];

function feed(messages: EngineMessage[]): { p: BuildProgress; events: Ev[] } {
  const events: Ev[] = [];
  const p = new BuildProgress((e) => events.push(e));
  for (const m of messages) p.message(m);
  p.end();
  return { p, events };
}

describe('BuildProgress', () => {
  it('turns the classic builder stream into steps and their output, without its bookkeeping', () => {
    const { p, events } = feed([
      { stream: 'Step 1/2 : FROM base\n' },
      { stream: ' ---> 1a2b3c\n' },
      { stream: 'Step 2/2 : RUN make\n' },
      { stream: ' ---> Running in 9f\n' },
      { stream: 'compil' },
      { stream: 'ing\nlinked\n' },
      { stream: 'Removing intermediate container 9f\n' },
      { aux: { ID: 'sha256:abc' } },
      { stream: 'Successfully built abc\n' },
    ]);
    expect(events).toEqual([
      { kind: 'step', text: 'FROM base', step: 1, total: 2 },
      { kind: 'step', text: 'RUN make', step: 2, total: 2 },
      { kind: 'output', text: 'compiling', step: 2, total: 2 },
      { kind: 'output', text: 'linked', step: 2, total: 2 },
    ]);
    expect(p.imageId).toBe('sha256:abc');
    expect(p.error).toBeNull();
  });

  it("a failing step: its number, text and output make the error; nothing else's output", () => {
    const { p } = feed([
      { stream: 'Step 1/3 : RUN echo one\n' },
      { stream: 'one\n' },
      { stream: 'Step 2/3 : RUN echo two && exit 3\n' },
      { stream: 'two\n' },
      { errorDetail: { message: "The command '/bin/sh -c echo two && exit 3' returned a non-zero code: 3" }, error: 'x' },
    ]);
    const err = buildFailure('t:1', p);
    expect(err.code).toBe('build_failed');
    expect(err.message).toMatch(
      /^the build of t:1 failed at step 2\/3 \(RUN echo two && exit 3\): The command .* returned a non-zero code: 3\n {2}\| two$/,
    );
    expect(err.details).toEqual({ step: 2, output: ['two'] });
  });

  it('says the disk is full when the step says so', () => {
    const { p } = feed([
      { stream: 'Step 1/1 : RUN dd if=/dev/zero of=/big\n' },
      { stream: 'dd: error writing /big: No space left on device\n' },
      { error: 'returned a non-zero code: 1' },
    ]);
    expect(p.outOfSpace()).toBe(true);
    const err = buildFailure('t:1', p);
    expect(err.message).toMatch(/ran out of disk space at step 1\/1/);
    expect(err.hint).toMatch(/docker system df/);
  });
});

describe('pull and JSON lines', () => {
  it('per-layer progress with bytes; other statuses as output; errors as errors', () => {
    expect(pullEvent({ status: 'Downloading', id: 'abc', progressDetail: { current: 10, total: 100 } })).toEqual({
      kind: 'progress',
      text: 'Downloading',
      layer: 'abc',
      current: 10,
      layerTotal: 100,
    });
    expect(pullEvent({ status: 'Pulling from library/debian', id: 'bookworm' })).toEqual({
      kind: 'output',
      text: 'bookworm: Pulling from library/debian',
    });
    expect(pullEvent({ error: 'dial tcp: lookup registry-1.docker.io: no such host' })?.kind).toBe('error');
  });

  it('splits a byte stream into messages across chunk borders; a line that is not JSON is output', () => {
    const got: EngineMessage[] = [];
    const j = new JsonLines((m) => got.push(m));
    j.push('{"stream":"a"}\n{"str');
    j.push('eam":"b"}\nnot json\n');
    j.end();
    expect(got).toEqual([{ stream: 'a' }, { stream: 'b' }, { stream: 'not json\n' }]);
  });
});
