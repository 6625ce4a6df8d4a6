import { SandboxDeskError } from '../shared/errors.js';
import { ANY_SANDBOX, DEFAULT_AGENT_POLICY, type AgentPolicy, type AgentScope } from '../shared/agent-scope.js';

/**
 * What an agent may touch, enforced by every MCP tool over every transport (stdio has no token, so
 * the tools — not the HTTP auth — are where the policy lives):
 *  - only the sandboxes of its scope (others are invisible in sandbox_list and refused by name);
 *  - commands as the sandbox's own user only, unless the config allows others (`agents.allowOtherUsers`);
 *  - no host mounts and no lease or control: no tool offers them (sandbox creation and the lease are
 *    the UI's, behind its token);
 *  - no host-level settings: warm pools are listed (pool_list) but set and drained only by a person
 *    (a pool holds host memory and is saved in the config), like tokens, images and plugins.
 */
export class AgentGuard {
  constructor(
    readonly scope: AgentScope = ANY_SANDBOX,
    readonly policy: AgentPolicy = DEFAULT_AGENT_POLICY,
  ) {}

  mayUse(sandbox: string): boolean {
    return this.scope.sandboxes === null || this.scope.sandboxes.includes(sandbox);
  }

  checkSandbox(sandbox: string): void {
    if (this.mayUse(sandbox)) return;
    throw new SandboxDeskError(
      'refused',
      `this agent's token is scoped to ${this.scope.sandboxes!.length ? `sandbox${this.scope.sandboxes!.length > 1 ? 'es' : ''} ${this.scope.sandboxes!.join(', ')}` : 'no sandbox'}; ${sandbox} is outside it`,
      {
        hint: 'use a sandbox of the scope, or ask for a token that includes it (sandbox-desk token create --sandbox NAME)',
      },
    );
  }

  /** The user a command may run as: the sandbox's own unless the config allows others. */
  checkUser(user: string | undefined, sandboxUser: string | null): string | undefined {
    if (user === undefined || this.policy.allowOtherUsers || (sandboxUser !== null && user === sandboxUser)) return user;
    throw new SandboxDeskError(
      'refused',
      `agents run commands as the sandbox's user${sandboxUser ? ` (${sandboxUser})` : ''}, not as ${user}`,
      {
        hint: 'omit user; to let agents choose another user (e.g. root), set agents.allowOtherUsers: true in the config',
      },
    );
  }
}
