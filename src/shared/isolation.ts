/** What keeps a sandbox apart from this machine, as the window and the CLI label a backend. */
// `remote`: another machine (the ssh plugin) — neither a container here nor this machine.
export type Isolation = 'container' | 'virtual-machine' | 'remote' | 'host';

export const ISOLATIONS: readonly Isolation[] = ['container', 'virtual-machine', 'remote', 'host'];

export const ISOLATION_LABEL: Record<Isolation, string> = {
  container: 'container',
  'virtual-machine': 'virtual machine',
  remote: 'remote machine',
  host: 'this machine',
};
