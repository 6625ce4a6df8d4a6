import '../test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from '../app/App.js';
import { FakeApi } from '../test/fake-api.js';

async function openDialog(api: FakeApi) {
  render(<App api={api} />);
  fireEvent.click(await screen.findByTestId('create-sandbox'));
  await waitFor(() => expect(screen.getByTestId<HTMLSelectElement>('create-backend').value).toBe('docker'));
}

const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

describe('create dialog: network policy', () => {
  it('sends the mode and the allow entries', async () => {
    const api = new FakeApi();
    await openDialog(api);
    type('create-name', 'net-1');
    fireEvent.change(screen.getByTestId('create-network'), { target: { value: 'allow' } });
    type('create-allow', 'pypi.org\n*.example.com:443');
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(api.callsOf('createSandbox')).toHaveLength(1));
    expect(api.callsOf('createSandbox')[0]).toEqual({
      name: 'net-1',
      backend: 'docker',
      network: 'allow',
      allow: ['pypi.org', '*.example.com:443'],
    });
  });

  it('a bad entry is shown before anything is sent', async () => {
    const api = new FakeApi();
    await openDialog(api);
    type('create-name', 'net-2');
    fireEvent.change(screen.getByTestId('create-network'), { target: { value: 'allow' } });
    type('create-allow', 'foo.*.com');
    fireEvent.click(screen.getByTestId('create-submit'));
    expect(await screen.findByText(/wildcard may only be the whole leftmost label/)).toBeTruthy();
    expect(api.callsOf('createSandbox')).toHaveLength(0);
  });

  it('offline sends no allow list', async () => {
    const api = new FakeApi();
    await openDialog(api);
    type('create-name', 'net-3');
    fireEvent.change(screen.getByTestId('create-network'), { target: { value: 'offline' } });
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(api.callsOf('createSandbox')).toEqual([{ name: 'net-3', backend: 'docker', network: 'offline' }]));
  });
});
