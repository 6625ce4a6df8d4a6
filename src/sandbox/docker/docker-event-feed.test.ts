import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { DockerEventFeed } from './docker-event-feed.js';

/** The engine's side, faked at the dockerode boundary: each open gives a stream, or fails (engine down). */
function fakeEngine() {
  const streams: PassThrough[] = [];
  let down = false;
  return {
    streams,
    setDown: (v: boolean) => (down = v),
    open: async () => {
      if (down) throw new Error('connect ENOENT /var/run/docker.sock');
      const s = new PassThrough();
      streams.push(s);
      return s;
    },
  };
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

describe('DockerEventFeed', () => {
  it('reports state changes of our containers (split across chunks), ignores the rest', async () => {
    const engine = fakeEngine();
    const changes: Array<{ sandbox: string | null; action: string }> = [];
    const feed = new DockerEventFeed(engine.open, {}, { changed: (c) => changes.push(c), engine: () => undefined });
    await until(() => engine.streams.length === 1);
    const ev = (action: string) =>
      JSON.stringify({ Type: 'container', Action: action, Actor: { ID: 'c1', Attributes: { 'io.sandbox-desk.sandbox': 'box' } } }) + '\n';
    const two = ev('die') + ev('exec_start: bash');
    engine.streams[0]!.write(two.slice(0, 30));
    engine.streams[0]!.write(two.slice(30) + 'not json\n' + ev('start'));
    await until(() => changes.length === 2);
    expect(changes).toEqual([
      { sandbox: 'box', backendRef: 'c1', action: 'die' },
      { sandbox: 'box', backendRef: 'c1', action: 'start' },
    ]);
    feed.dispose();
  });

  it('the engine going away (a dockerd restart) is reported, retried with backoff, and reported back', async () => {
    const engine = fakeEngine();
    const seen: Array<[boolean, string | null]> = [];
    const feed = new DockerEventFeed(engine.open, {}, { changed: () => undefined, engine: (r, d) => seen.push([r, d]) }, [5, 5]);
    await until(() => engine.streams.length === 1);
    engine.setDown(true);
    engine.streams[0]!.end(); // the daemon stops: its stream ends
    await until(() => seen.length === 1);
    expect(seen[0]![0]).toBe(false);
    await new Promise((r) => setTimeout(r, 40)); // several failed reconnects: still one "gone"
    expect(seen.length).toBe(1);
    engine.setDown(false);
    await until(() => seen.length === 2);
    expect(seen[1]).toEqual([true, null]);
    feed.dispose();
    expect(engine.streams.at(-1)!.destroyed).toBe(true);
  });
});
