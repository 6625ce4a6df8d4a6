/**
 * What an agent may do, as the server and the agent bridge (MCP) both see it. A wire type: the store
 * persists it, the API's auth hands it to the MCP handler, the MCP tools enforce it.
 */
export interface AgentScope {
  /** The only surface an agent token opens: the MCP tools (never /api/call/*, the viewer or streams). */
  tools: 'mcp';
  /** When set, the only sandboxes the agent may see or touch; null: every sandbox. */
  sandboxes: string[] | null;
}

/** One agent token as listed: never its secret (only a hash is kept). */
export interface AgentTokenInfo {
  id: string;
  label: string | null;
  scope: AgentScope;
  createdAt: string;
  lastUsedAt: string | null;
}

/**
 * The app-wide policy for agents, from the config (key `agents.allowOtherUsers`). Injected: the core
 * never reads the config for it.
 */
export interface AgentPolicy {
  /** May an agent run commands as a user other than the sandbox's own (e.g. root)? Default false. */
  allowOtherUsers: boolean;
}

export const DEFAULT_AGENT_POLICY: AgentPolicy = { allowOtherUsers: false };

/** The unscoped agent (stdio `sandbox-desk mcp`, the token `serve --mcp` prints). */
export const ANY_SANDBOX: AgentScope = { tools: 'mcp', sandboxes: null };
