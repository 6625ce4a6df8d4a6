import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AgentScope } from '../shared/agent-scope.js';

/** Who a request speaks for. The UI token is the app's; agent tokens open the MCP tools only. */
export type Principal = { kind: 'ui' } | { kind: 'agent'; tokenId: string; scope: AgentScope };

/** How the UI token came: in the URL once (then it becomes a cookie), or in a header or our cookie. */
export type Authenticated = { principal: Principal; via: 'query' | 'header' | 'cookie' };

/** Looks a presented agent token up (the store, in the server). */
export interface AgentTokenVerifier {
  verify(token: string): { id: string; scope: AgentScope } | null;
}

export const UI_COOKIE = 'sdesk_token';

function sameSecret(given: string | null | undefined, secret: string): boolean {
  const a = Buffer.from(given ?? '');
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The server's credentials: the UI token (random per server, in the URL it prints), an optional
 * agent token that lives as long as the server (what `serve --mcp` prints), and the persisted agent
 * tokens (`sandbox-desk token create`). Agent tokens count only in an `Authorization: Bearer` header:
 * never in a URL or a cookie, so a browser page can never carry one along.
 */
export class Authenticator {
  readonly uiToken = randomBytes(24).toString('hex');
  readonly sessionAgent: { token: string; tokenId: string; scope: AgentScope } | null;

  constructor(private readonly opts: { agentTokens?: AgentTokenVerifier | undefined; sessionAgentScope?: AgentScope | undefined } = {}) {
    this.sessionAgent = opts.sessionAgentScope
      ? { token: `sdat_serve_${randomBytes(32).toString('base64url')}`, tokenId: 'serve', scope: opts.sessionAgentScope }
      : null;
  }

  authenticate(req: Pick<IncomingMessage, 'headers'>, query: URLSearchParams): Authenticated | null {
    if (sameSecret(query.get('token'), this.uiToken)) return { principal: { kind: 'ui' }, via: 'query' };
    const auth = req.headers.authorization;
    const bearer = typeof auth === 'string' && /^Bearer /i.test(auth) ? auth.slice(7).trim() : null;
    if (bearer !== null) {
      if (sameSecret(bearer, this.uiToken)) return { principal: { kind: 'ui' }, via: 'header' };
      const agent = this.agent(bearer);
      if (agent) return { principal: agent, via: 'header' };
    }
    const cookie = /(?:^|;\s*)sdesk_token=([0-9a-f]+)/.exec(req.headers.cookie ?? '')?.[1];
    if (sameSecret(cookie, this.uiToken)) return { principal: { kind: 'ui' }, via: 'cookie' };
    return null;
  }

  private agent(token: string): Principal | null {
    if (this.sessionAgent && sameSecret(token, this.sessionAgent.token))
      return { kind: 'agent', tokenId: this.sessionAgent.tokenId, scope: this.sessionAgent.scope };
    const found = this.opts.agentTokens?.verify(token);
    return found ? { kind: 'agent', tokenId: found.id, scope: found.scope } : null;
  }
}
