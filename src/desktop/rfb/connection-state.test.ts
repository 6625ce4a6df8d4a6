import { describe, expect, it } from 'vitest';
import { RfbConnectionState, RfbStateError, type RfbState, type RfbStateChange } from './connection-state.js';

function walk(path: RfbState[]): RfbStateChange[] {
  const machine = new RfbConnectionState();
  const seen: RfbStateChange[] = [];
  machine.onDidChange((c) => seen.push(c));
  for (const next of path) machine.moveTo(next);
  expect(machine.state).toBe(path.at(-1));
  return seen;
}

describe('RfbConnectionState', () => {
  it('starts at protocol-version and walks the 3.8, 3.7 and 3.3 handshakes, announcing each move', () => {
    expect(new RfbConnectionState().state).toBe('protocol-version');
    expect(walk(['security', 'security-result', 'server-init', 'connected', 'disconnected'])).toEqual([
      { from: 'protocol-version', to: 'security' },
      { from: 'security', to: 'security-result' },
      { from: 'security-result', to: 'server-init' },
      { from: 'server-init', to: 'connected' },
      { from: 'connected', to: 'disconnected' },
    ]);
    // 3.3 and 3.7 have no SecurityResult for None.
    expect(walk(['security', 'server-init', 'connected']).map((c) => c.to)).toEqual(['security', 'server-init', 'connected']);
  });

  it('may be disconnected from any state but the final one', () => {
    const paths: RfbState[][] = [
      [],
      ['security'],
      ['security', 'security-result'],
      ['security', 'server-init'],
      ['security', 'server-init', 'connected'],
    ];
    for (const path of paths) expect(walk([...path, 'disconnected']).at(-1)?.to).toBe('disconnected');
  });

  it('refuses a transition the table does not allow, with both states named, and stays put', () => {
    const machine = new RfbConnectionState();
    expect(() => machine.moveTo('connected')).toThrow(new RfbStateError('protocol-version', 'connected'));
    expect(() => machine.moveTo('connected')).toThrow('invalid RFB state transition protocol-version → connected');
    expect(machine.state).toBe('protocol-version');
    machine.moveTo('security');
    expect(machine.canMoveTo('protocol-version')).toBe(false);
    expect(() => machine.moveTo('security')).toThrow(RfbStateError);
  });

  it('treats disconnected as final: no move out of it, not even to itself', () => {
    const machine = new RfbConnectionState();
    machine.moveTo('disconnected');
    expect(machine.isFinal).toBe(true);
    for (const next of ['protocol-version', 'security', 'security-result', 'server-init', 'connected', 'disconnected'] as const) {
      expect(machine.canMoveTo(next)).toBe(false);
      expect(() => machine.moveTo(next)).toThrow(RfbStateError);
    }
    expect(machine.state).toBe('disconnected');
  });

  it('announces nothing after dispose', () => {
    const machine = new RfbConnectionState();
    const seen: RfbStateChange[] = [];
    machine.onDidChange((c) => seen.push(c));
    machine.dispose();
    machine.moveTo('security');
    expect(seen).toEqual([]);
  });
});
