/** What keeps a sandbox apart from this machine, as the window and the CLI label a backend. */
export type Isolation = 'container' | 'virtual-machine' | 'host';

export const ISOLATION_LABEL: Record<Isolation, string> = {
  container: 'container',
  'virtual-machine': 'virtual machine',
  host: 'this machine',
};
