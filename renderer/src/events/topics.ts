import type { CoreEvent } from '../../../src/api/contract.js';

/** Which events change which panel's value (usePoll's `live`): one place, so a new topic is added once. */
export const touches = {
  // A policy change is part of a sandbox's info (its `network`, shown on the details card): without it
  // the card kept saying "nothing allowed yet" after a host was added, as long as the stream was live.
  sandboxList: (e: CoreEvent) =>
    e.topic === 'sandbox' ||
    e.topic === 'engine' ||
    e.topic === 'plugin' ||
    (e.topic === 'operation' && e.operation.sandbox !== null) ||
    (e.topic === 'network' && e.kind === 'policy'),
  sessionsOf: (sandbox: string) => (e: CoreEvent) => e.topic === 'session' && e.sandbox === sandbox,
  callLogOf: (sandbox: string) => (e: CoreEvent) => e.topic === 'callLog' && (e.sandbox === sandbox || e.sandbox === null),
  desktopOf: (sandbox: string) => (e: CoreEvent) => (e.topic === 'desktop' || e.topic === 'sandbox') && e.sandbox === sandbox,
  leaseOf: (sandbox: string) => (e: CoreEvent) => (e.topic === 'lease' || e.topic === 'desktop') && e.sandbox === sandbox,
  operationOf: (sandbox: string) => (e: CoreEvent) => e.topic === 'operation' && e.operation.sandbox === sandbox,
  networkOf: (sandbox: string) => (e: CoreEvent) => e.topic === 'network' && e.sandbox === sandbox,
  checkpointsOf: (sandbox: string) => (e: CoreEvent) => (e.topic === 'checkpoint' || e.topic === 'sandbox') && e.sandbox === sandbox,
  agentActionOf: (sandbox: string) => (e: CoreEvent) => e.topic === 'agentAction' && e.sandbox === sandbox,
  /** The replay view: its recording (`replay`), and the stores its events are read from. */
  replayOf: (sandbox: string) => (e: CoreEvent) =>
    (e.topic === 'replay' ||
      e.topic === 'lease' ||
      e.topic === 'checkpoint' ||
      e.topic === 'agentAction' ||
      e.topic === 'agentRefused' ||
      e.topic === 'desktop') &&
    e.sandbox === sandbox,
  replayCallsOf: (sandbox: string) => (e: CoreEvent) => e.topic === 'callLog' && (e.sandbox === sandbox || e.sandbox === null),
  images: (e: CoreEvent) => e.topic === 'operation' && e.operation.kind.startsWith('image-'),
  /** The sidebar's warm pools: a fill, a claim, a setting (a claim is also a new sandbox). */
  pools: (e: CoreEvent) => e.topic === 'pool' || (e.topic === 'sandbox' && e.reason === 'created'),
};
