import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN_PREFIX, hashAgentToken } from './agent-token-store.js';
import { Store } from './store.js';

describe('agent tokens', () => {
  const dirs: string[] = [];
  const open = () => {
    const d = mkdtempSync(join(tmpdir(), 'sdesk-tok-'));
    dirs.push(d);
    return Store.open(d);
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('stores only a hash; the secret verifies, with its scope', () => {
    const s = open();
    const { token, info } = s.agentTokens.create({ label: 'ci', sandboxes: ['a', 'b', 'a'] });
    expect(token.startsWith(`${AGENT_TOKEN_PREFIX}${info.id}_`)).toBe(true);
    expect(info.scope).toEqual({ tools: 'mcp', sandboxes: ['a', 'b'] });
    const raw = JSON.stringify(
      (s as unknown as { db: { prepare(q: string): { all(): unknown } } }).db.prepare('SELECT * FROM agent_tokens').all(),
    );
    expect(raw).not.toContain(token.slice(AGENT_TOKEN_PREFIX.length + 9));
    expect(raw).toContain(hashAgentToken(token));
    expect(s.agentTokens.verify(token)).toMatchObject({ id: info.id, label: 'ci', scope: { sandboxes: ['a', 'b'] } });
    expect(s.agentTokens.list()[0]!.lastUsedAt).not.toBeNull();
    s.close();
  });

  it('a wrong, truncated or UI-shaped token does not verify; rm forgets a token by id or label', () => {
    const s = open();
    const { token, info } = s.agentTokens.create({});
    expect(info.scope.sandboxes).toBeNull();
    expect(s.agentTokens.verify(token.slice(0, -1))).toBeNull();
    expect(s.agentTokens.verify('0'.repeat(48))).toBeNull();
    s.agentTokens.create({ label: 'other' });
    expect(s.agentTokens.remove(info.id)).toBe(true);
    expect(s.agentTokens.verify(token)).toBeNull();
    expect(s.agentTokens.remove('other')).toBe(true);
    expect(s.agentTokens.remove('other')).toBe(false);
    expect(s.agentTokens.list()).toEqual([]);
    s.close();
  });
});
