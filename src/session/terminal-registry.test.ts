import { describe, expect, it } from 'vitest';
import { Emitter } from '../shared/lifecycle.js';
import { TerminalRegistry, type RegisteredTerminal } from './terminal-registry.js';

class FakeTerminal implements RegisteredTerminal {
  private readonly exit = new Emitter<unknown>();
  readonly onExit = this.exit.event;
  exited = false;
  disposed = 0;
  viewers = 0;
  cols = 80;
  rows = 24;
  scrollbackBytes = 0;
  constructor(
    readonly id: string,
    readonly createdAt: string,
  ) {}
  dispose(): void {
    this.disposed++;
    if (this.exited) return;
    this.exited = true;
    this.exit.fire({});
  }
}

describe('TerminalRegistry', () => {
  it("lists a sandbox's open terminals, oldest first, and no other sandbox's", () => {
    const r = new TerminalRegistry<FakeTerminal>();
    r.add(new FakeTerminal('b', '2026-01-01T00:00:02Z'), { sandbox: 's1', session: 'term-2', startedIn: '/' });
    r.add(new FakeTerminal('a', '2026-01-01T00:00:01Z'), { sandbox: 's1', session: 'term-1', startedIn: '/' });
    r.add(new FakeTerminal('c', '2026-01-01T00:00:00Z'), { sandbox: 's2', session: 'term-1', startedIn: '/' });
    expect(r.list('s1').map((t) => [t.terminalId, t.session])).toEqual([
      ['a', 'term-1'],
      ['b', 'term-2'],
    ]);
    expect(r.list('s2')).toHaveLength(1);
    expect(r.list('nope')).toEqual([]);
  });

  it('reports what a window needs to reattach: viewers, size, scrollback held', () => {
    const r = new TerminalRegistry<FakeTerminal>();
    const t = new FakeTerminal('a', '2026-01-01T00:00:00Z');
    t.viewers = 2;
    t.cols = 120;
    t.scrollbackBytes = 42;
    r.add(t, { sandbox: 's', session: 'term-1', startedIn: '/' });
    expect(r.list('s')[0]).toMatchObject({ viewers: 2, cols: 120, rows: 24, scrollbackBytes: 42, sandbox: 's' });
  });

  it('a terminal stays until its shell ends, then it is forgotten', () => {
    const r = new TerminalRegistry<FakeTerminal>();
    const t = new FakeTerminal('a', '2026-01-01T00:00:00Z');
    r.add(t, { sandbox: 's', session: 'term-1', startedIn: '/' });
    expect(r.get('a')).toBe(t);
    t.dispose();
    expect(r.list('s')).toEqual([]);
    expect(() => r.get('a')).toThrow(/no terminal a/);
  });

  it('close ends the shell; closing one that is gone says so', () => {
    const r = new TerminalRegistry<FakeTerminal>();
    const t = new FakeTerminal('a', '2026-01-01T00:00:00Z');
    r.add(t, { sandbox: 's', session: 'term-1', startedIn: '/' });
    r.close('a');
    expect(t.disposed).toBe(1);
    expect(() => r.close('a')).toThrow(expect.objectContaining({ code: 'not_found' }));
  });

  it('closeAll ends every terminal', () => {
    const r = new TerminalRegistry<FakeTerminal>();
    const ts = ['a', 'b'].map((id) => new FakeTerminal(id, '2026-01-01T00:00:00Z'));
    ts.forEach((t, i) => r.add(t, { sandbox: `s${i}`, session: 'term-1', startedIn: '/' }));
    r.closeAll();
    expect(ts.map((t) => t.disposed)).toEqual([1, 1]);
    expect(r.list('s0')).toEqual([]);
  });

  describe('held across a restore', () => {
    const setup = () => {
      const r = new TerminalRegistry<FakeTerminal>();
      const old = new FakeTerminal('a', '2026-01-01T00:00:00Z');
      r.add(old, { sandbox: 's', session: 'term-1', startedIn: '/etc' });
      r.add(new FakeTerminal('z', '2026-01-01T00:00:01Z'), { sandbox: 'other', session: 'term-1', startedIn: '/' });
      const held = r.hold('s', (t) => Buffer.from(`scrollback of ${t.id}`));
      return { r, old, held };
    };

    it("keeps the sandbox's terminals by id, with their scrollback, and lists them restarting while their shells end", () => {
      const { r, old, held } = setup();
      expect(held).toEqual([expect.objectContaining({ terminalId: 'a', session: 'term-1', startedIn: '/etc', cols: 80, rows: 24 })]);
      expect(held[0]!.scrollback.toString()).toBe('scrollback of a');
      expect(r.isHeld('a')).toBe(true);
      expect(r.isHeld('z')).toBe(false);
      old.dispose();
      expect(r.list('s')).toEqual([expect.objectContaining({ terminalId: 'a', restarting: true, viewers: 0 })]);
      expect(r.list('other')[0]!.restarting).toBeUndefined();
      // Not attachable meanwhile, and the refusal says to wait rather than that it is gone.
      expect(() => r.get('a')).toThrow(expect.objectContaining({ code: 'refused', message: expect.stringMatching(/restarting/) }));
    });

    it('a terminal added under the held id is the live one again, even before the old shell is gone', () => {
      const { r, old } = setup();
      const reopened = new FakeTerminal('a', '2026-01-01T00:00:05Z');
      r.add(reopened, { sandbox: 's', session: 'term-1', startedIn: '/etc' });
      expect(r.isHeld('a')).toBe(false);
      // The old shell ends after the new one was registered: the new entry stays.
      old.dispose();
      expect(r.get('a')).toBe(reopened);
      expect(r.list('s')).toEqual([expect.objectContaining({ terminalId: 'a' })]);
      expect(r.list('s')[0]!.restarting).toBeUndefined();
    });

    it('one given up (release) or closed from its tab meanwhile is gone', () => {
      const { r, old } = setup();
      old.dispose();
      r.release('a');
      expect(r.list('s')).toEqual([]);
      expect(() => r.get('a')).toThrow(expect.objectContaining({ code: 'not_found' }));

      const again = setup();
      again.r.close('a');
      expect(again.old.disposed).toBe(1);
      expect(again.r.isHeld('a')).toBe(false);
      expect(again.r.list('s')).toEqual([]);
    });
  });
});
