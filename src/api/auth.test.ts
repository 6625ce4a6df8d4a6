import { describe, expect, it } from 'vitest';
import { ANY_SANDBOX } from '../shared/agent-scope.js';
import { Authenticator } from './auth.js';

const q = (s = '') => new URLSearchParams(s);

describe("the server's credentials", () => {
  const stored = {
    verify: (t: string) => (t === 'sdat_x_stored' ? { id: 'x', scope: { tools: 'mcp' as const, sandboxes: ['a'] } } : null),
  };
  const auth = new Authenticator({ agentTokens: stored, sessionAgentScope: ANY_SANDBOX });

  it('the UI token works in the query, a Bearer header or the cookie', () => {
    expect(auth.authenticate({ headers: {} }, q(`token=${auth.uiToken}`))).toEqual({ principal: { kind: 'ui' }, via: 'query' });
    expect(auth.authenticate({ headers: { authorization: `Bearer ${auth.uiToken}` } }, q())).toMatchObject({ principal: { kind: 'ui' } });
    expect(auth.authenticate({ headers: { cookie: `a=b; sdesk_token=${auth.uiToken}` } }, q())).toMatchObject({ via: 'cookie' });
  });

  it('agent tokens count only as a Bearer header, with their scope', () => {
    const serveToken = auth.sessionAgent!.token;
    expect(auth.authenticate({ headers: { authorization: `Bearer ${serveToken}` } }, q())).toEqual({
      principal: { kind: 'agent', tokenId: 'serve', scope: ANY_SANDBOX },
      via: 'header',
    });
    expect(auth.authenticate({ headers: { authorization: 'Bearer sdat_x_stored' } }, q())).toMatchObject({
      principal: { kind: 'agent', scope: { sandboxes: ['a'] } },
    });
    expect(auth.authenticate({ headers: {} }, q(`token=${serveToken}`))).toBeNull();
    expect(auth.authenticate({ headers: { cookie: `sdesk_token=${serveToken}` } }, q())).toBeNull();
  });

  it('nothing, junk and near misses are refused', () => {
    expect(auth.authenticate({ headers: {} }, q())).toBeNull();
    expect(auth.authenticate({ headers: { authorization: `Bearer ${auth.uiToken}x` } }, q())).toBeNull();
    expect(auth.authenticate({ headers: { authorization: 'Basic Zm9v' } }, q())).toBeNull();
    expect(new Authenticator().sessionAgent).toBeNull();
  });
});
