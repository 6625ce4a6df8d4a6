import { describe, expect, it } from 'vitest';
import { AgentGuard } from './agent-policy.js';

describe('the agent policy', () => {
  it('an unscoped agent may use every sandbox; a scoped one only its own, refused with what to do', () => {
    expect(new AgentGuard().mayUse('anything')).toBe(true);
    const g = new AgentGuard({ tools: 'mcp', sandboxes: ['a', 'b'] });
    expect(g.mayUse('a')).toBe(true);
    expect(() => g.checkSandbox('c')).toThrow(/scoped to sandboxes a, b; c is outside it/);
    expect(() => new AgentGuard({ tools: 'mcp', sandboxes: [] }).checkSandbox('a')).toThrow(/scoped to no sandbox/);
  });

  it('commands run as the sandbox user unless the config allows others', () => {
    const g = new AgentGuard();
    expect(g.checkUser(undefined, 'agent')).toBeUndefined();
    expect(g.checkUser('agent', 'agent')).toBe('agent');
    expect(() => g.checkUser('root', 'agent')).toThrow(/as the sandbox's user \(agent\), not as root/);
    expect(() => g.checkUser('root', null)).toThrow(/as the sandbox's user, not as root/);
    try {
      g.checkUser('root', 'agent');
    } catch (err) {
      expect((err as { hint: string }).hint).toMatch(/agents\.allowOtherUsers: true/);
    }
    expect(new AgentGuard(undefined, { allowOtherUsers: true }).checkUser('root', 'agent')).toBe('root');
  });
});
