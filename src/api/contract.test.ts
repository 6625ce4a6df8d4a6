import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { API } from './contract.js';

describe('the contract', () => {
  it('its surface — every method and the JSON schema of its params — matches the committed snapshot', async () => {
    const surface = Object.fromEntries(Object.entries(API).map(([name, m]) => [name, z.toJSONSchema(m.params, { io: 'input' })]));
    // A change here is a change to what every client may send: review the diff of this file.
    await expect(JSON.stringify(surface, null, 2) + '\n').toMatchFileSnapshot('./__snapshots__/contract-surface.json');
  });

  it('every method validates its params', () => {
    for (const [name, m] of Object.entries(API)) {
      expect(m.params.safeParse({ definitely: { not: 'valid' }, name: 7, sandbox: 7 }).success, name).toBe(
        [
          'backends',
          'plugins',
          'listSandboxes',
          'poolList',
          'listImages',
          'engineInfo',
          'eventsTicket',
          'listOperations',
          'disabledPlugins',
          'agentTokenList',
        ].includes(name),
      );
    }
  });
});
