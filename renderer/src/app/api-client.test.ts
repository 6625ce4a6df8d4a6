import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, bridgeClient, httpClient } from './api-client.js';

afterEach(() => vi.unstubAllGlobals());

describe('api client', () => {
  it('browser mode: POSTs JSON params to /api/call/<method> with same-origin credentials', async () => {
    const fetch = vi.fn(async () => new Response(JSON.stringify({ ok: [{ name: 'a' }] }), { status: 200 }));
    vi.stubGlobal('fetch', fetch);
    const result = await httpClient().call('listSessions', { sandbox: 'a' });
    expect(result).toEqual([{ name: 'a' }]);
    expect(fetch).toHaveBeenCalledWith('/api/call/listSessions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      credentials: 'same-origin',
      body: JSON.stringify({ sandbox: 'a' }),
    });
  });

  it('browser mode: an {error} body becomes an ApiError whatever the HTTP status', async () => {
    vi.stubGlobal(
      'fetch',
      async () =>
        new Response(
          JSON.stringify({ error: { code: 'name_taken', message: 'a sandbox named a already exists', hint: 'choose another name' } }),
          { status: 409 },
        ),
    );
    const err = await httpClient()
      .call('createSandbox', { name: 'a', backend: 'docker' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'name_taken', message: 'a sandbox named a already exists', hint: 'choose another name' });
  });

  it('browser mode: a non-JSON answer and an unreachable server are errors with a hint', async () => {
    vi.stubGlobal('fetch', async () => new Response('nope', { status: 401, statusText: 'Unauthorized' }));
    await expect(httpClient().call('backends', {})).rejects.toMatchObject({ code: 'refused' });
    vi.stubGlobal('fetch', async () => {
      throw new TypeError('Failed to fetch');
    });
    await expect(httpClient().call('backends', {})).rejects.toMatchObject({ code: 'unreachable', hint: expect.stringContaining('serve') });
  });

  it('Electron: invoke(method, params), {ok} unwrapped, {error} thrown', async () => {
    const invoke = vi.fn(async (method: string) =>
      method === 'backends' ? { ok: [] } : { error: { code: 'not_found', message: 'no sandbox named x' } },
    );
    const api = bridgeClient({ invoke });
    expect(await api.call('backends', {})).toEqual([]);
    await expect(api.call('inspectSandbox', { name: 'x' })).rejects.toMatchObject({ code: 'not_found', message: 'no sandbox named x' });
    expect(invoke).toHaveBeenCalledWith('inspectSandbox', { name: 'x' });
  });
});
