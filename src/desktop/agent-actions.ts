import { SandboxDeskError } from '../shared/errors.js';
import { runIn } from '../exec/run-in.js';
import type { SandboxEnvironment } from '../sandbox/provider.js';
import { displayEnv, type DesktopLayout } from './desktop-runtime.js';

/**
 * What an agent can do on its desktop. Input goes through xdotool inside the sandbox (one exec per
 * action, as the desktop's user): it types with the X keyboard map, so symbols arrive as typed, and it
 * needs no extra protocol in the core. Screenshots and resizes go through RFB (desktop-service).
 */
export type AgentAction =
  | { kind: 'move'; x: number; y: number }
  | { kind: 'click'; x: number; y: number; button?: 1 | 2 | 3; double?: boolean }
  | { kind: 'type'; text: string }
  | { kind: 'key'; keys: string }
  | { kind: 'scroll'; x: number; y: number; direction: 'up' | 'down' | 'left' | 'right'; amount?: number };

const SCROLL_BUTTON = { up: 4, down: 5, left: 6, right: 7 } as const;

function coord(n: number, name: string): string {
  if (!Number.isInteger(n) || n < 0 || n > 16384)
    throw new SandboxDeskError('invalid_input', `${name} must be an integer pixel coordinate, got ${n}`);
  return String(n);
}

/** The xdotool argv for an action; validated, never a shell string. */
export function xdotoolArgs(action: AgentAction): string[] {
  switch (action.kind) {
    case 'move':
      return ['mousemove', coord(action.x, 'x'), coord(action.y, 'y')];
    case 'click':
      return [
        'mousemove',
        coord(action.x, 'x'),
        coord(action.y, 'y'),
        'click',
        ...(action.double ? ['--repeat', '2'] : []),
        String(action.button ?? 1),
      ];
    case 'type':
      if (action.text.length > 10_000) throw new SandboxDeskError('invalid_input', 'text to type is longer than 10000 characters');
      return ['type', '--delay', '8', '--', action.text];
    case 'key':
      // Key names and combinations only (ctrl+l, Return, shift+Tab …): no free text reaches xdotool here.
      if (!/^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*( [A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*)*$/.test(action.keys)) {
        throw new SandboxDeskError('invalid_input', `keys ${JSON.stringify(action.keys)} are not key names such as "ctrl+l" or "Return"`);
      }
      return ['key', '--', ...action.keys.split(' ')];
    case 'scroll': {
      const amount = action.amount ?? 3;
      if (!Number.isInteger(amount) || amount < 1 || amount > 100)
        throw new SandboxDeskError('invalid_input', 'scroll amount must be 1–100');
      return [
        'mousemove',
        coord(action.x, 'x'),
        coord(action.y, 'y'),
        'click',
        '--repeat',
        String(amount),
        String(SCROLL_BUTTON[action.direction]),
      ];
    }
  }
}

/** `user` is the desktop's account: only it holds the display's X cookie (see desktop-runtime). */
export async function runXdotool(env: SandboxEnvironment, layout: DesktopLayout, action: AgentAction, user?: string): Promise<void> {
  const r = await runIn(env, ['env', ...displayEnv(layout), 'xdotool', ...xdotoolArgs(action)], { user, timeoutMs: 30_000 });
  if (r.code !== 0)
    throw new SandboxDeskError('backend_unavailable', `xdotool ${action.kind} failed: ${r.stderr.trim() || `exit ${r.code}`}`);
}

/** Where the X pointer is, read inside the sandbox. */
export async function pointerLocation(env: SandboxEnvironment, layout: DesktopLayout, user?: string): Promise<{ x: number; y: number }> {
  const r = await runIn(env, ['env', ...displayEnv(layout), 'xdotool', 'getmouselocation', '--shell'], { user });
  const x = /X=(\d+)/.exec(r.stdout.toString())?.[1];
  const y = /Y=(\d+)/.exec(r.stdout.toString())?.[1];
  if (r.code !== 0 || x === undefined || y === undefined)
    throw new SandboxDeskError('backend_unavailable', `xdotool getmouselocation failed: ${r.stderr.trim()}`);
  return { x: Number(x), y: Number(y) };
}
