/**
 * Where a sandbox's bot desktop runs. `auto` puts it inside the sandbox when the backend can host
 * streams, and on the host only for the `local` backend (whose sandbox *is* the host). Anything else
 * is refused with a reason — never a silent fall-back to the host, which would put the agent's screen
 * and browser outside the sandbox it was given.
 */
export type PlacementSetting = 'auto' | 'sandbox' | 'host';

export type Placement = { where: 'sandbox' | 'host'; backend: string } | { where: 'refused'; backend: string; reason: string };

export function resolvePlacement(setting: PlacementSetting, backend: { name: string; supportsStreams: boolean }): Placement {
  const name = backend.name;
  // The local backend's sandbox is this machine: its desktop is on the host whatever the setting.
  if (name === 'local') return { where: 'host', backend: name };
  // An explicit opt-in, not a fall-back.
  if (setting === 'host') return { where: 'host', backend: name };
  if (backend.supportsStreams) return { where: 'sandbox', backend: name };
  return {
    where: 'refused',
    backend: name,
    reason:
      `the ${name} backend cannot host a desktop stream (supportsStreams is false), and running the desktop on the ` +
      `host would put the agent's screen and browser outside its sandbox; pass --placement host (placement: "host") to allow that explicitly`,
  };
}
