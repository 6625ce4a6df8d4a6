import './test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { ApiError } from './api-client.js';
import { App } from './App.js';
import { FakeApi, sandboxInfo } from './test/fake-api.js';

async function openDialog(api: FakeApi) {
  render(<App api={api} />);
  fireEvent.click(await screen.findByTestId('create-sandbox'));
  // The backend list arrives from the server; docker is preselected.
  await waitFor(() => expect(screen.getByTestId<HTMLSelectElement>('create-backend').value).toBe('docker'));
}

const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

describe('create dialog', () => {
  it('sends the fields that were filled, and selects the new sandbox', async () => {
    const api = new FakeApi();
    await openDialog(api);
    type('create-name', 'agent-1');
    type('create-image', 'sandbox-desk/desktop:latest');
    type('create-default-cwd', '~');
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(api.callsOf('createSandbox')).toHaveLength(1));
    expect(api.callsOf('createSandbox')[0]).toEqual({
      name: 'agent-1',
      backend: 'docker',
      image: 'sandbox-desk/desktop:latest',
      defaultCwd: '~',
    });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(await screen.findByTestId('sandbox-row-agent-1')).toBeTruthy();
  });

  it('leaves out empty fields so the backend defaults apply, and uses the chosen backend', async () => {
    const api = new FakeApi();
    await openDialog(api);
    type('create-name', 'plain');
    fireEvent.change(screen.getByTestId('create-backend'), { target: { value: 'local' } });
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(api.callsOf('createSandbox')).toEqual([{ name: 'plain', backend: 'local' }]));
  });

  it('suggests the desktop image for docker', async () => {
    await openDialog(new FakeApi());
    expect(screen.getByTestId<HTMLInputElement>('create-image').placeholder).toBe('sandbox-desk/base:latest');
    fireEvent.click(screen.getByRole('button', { name: 'sandbox-desk/desktop:latest' }));
    expect(screen.getByTestId<HTMLInputElement>('create-image').value).toBe('sandbox-desk/desktop:latest');
    expect(screen.getByRole('dialog').textContent).toMatch(/the sandbox user's real home, resolved after connecting/);
  });

  it("shows the server's error and hint where it happened, and keeps the dialog open", async () => {
    let release: () => void = () => undefined;
    const api = new FakeApi().on('createSandbox', async (p) => {
      await new Promise<void>((r) => (release = r));
      throw new ApiError('image_not_found', `Image ${p.image} does not exist in the Docker engine`, 'build it with `npm run setup`');
    });
    await openDialog(api);
    type('create-name', 'x1');
    type('create-image', 'sandbox-desk/nope:latest');
    fireEvent.click(screen.getByTestId('create-submit'));
    // Progress while the server works.
    expect(await screen.findByText(/Creating and starting/)).toBeTruthy();
    expect(screen.getByTestId<HTMLButtonElement>('create-submit').disabled).toBe(true);
    release();
    const error = await screen.findByTestId('create-error');
    expect(error.textContent).toContain('Image sandbox-desk/nope:latest does not exist in the Docker engine');
    expect(error.textContent).toContain('npm run setup');
    // Next to the image field, not at the bottom of the form.
    expect(error.closest('label')?.querySelector('[data-testid="create-image"]')).toBeTruthy();
    expect(screen.getByRole('dialog')).toBeTruthy();
    expect(screen.getByTestId<HTMLInputElement>('create-name').value).toBe('x1');
  });

  it('shows a taken name at the name field', async () => {
    const api = new FakeApi({ sandboxes: [sandboxInfo({ name: 'dup' })] });
    await openDialog(api);
    type('create-name', 'dup');
    fireEvent.click(screen.getByTestId('create-submit'));
    const error = await screen.findByTestId('create-error');
    expect(error.textContent).toContain('a sandbox named dup already exists');
    expect(error.closest('label')?.querySelector('[data-testid="create-name"]')).toBeTruthy();
  });
});

describe('create dialog: VMs', () => {
  const withQemu = () => {
    const api = new FakeApi();
    api.backends = [
      ...api.backends,
      { name: 'qemu', description: 'a QEMU virtual machine', isContainer: true, supportsStreams: true, defaultCwd: '~' },
    ];
    return api;
  };

  it('offers CPUs, memory, disk and acceleration for qemu, and sends only what was filled', async () => {
    const api = withQemu();
    await openDialog(api);
    expect(screen.queryByTestId('create-vm-fields')).toBeNull();
    fireEvent.change(screen.getByTestId('create-backend'), { target: { value: 'qemu' } });
    type('create-name', 'vm-1');
    type('create-vm-cpus', '4');
    type('create-vm-memory', ' 2048 ');
    fireEvent.change(screen.getByTestId('create-vm-accel'), { target: { value: 'tcg' } });
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() =>
      expect(api.callsOf('createSandbox')).toEqual([
        { name: 'vm-1', backend: 'qemu', options: { cpus: '4', memory: '2048', accel: 'tcg' } },
      ]),
    );
  });

  it('shows the boot step the server reports while it creates and starts', async () => {
    let release: () => void = () => undefined;
    const api = withQemu()
      .on('createSandbox', async (p) => {
        await new Promise<void>((r) => (release = r));
        return { sandbox: sandboxInfo({ name: p.name, backend: 'qemu' }), warnings: [] };
      })
      .on('sandboxProgress', () => ({
        kind: 'start',
        startedAt: '2026-01-01T00:00:00.000Z',
        done: false,
        error: null,
        cancellable: true,
        cancelled: false,
        events: [{ step: 'ssh', message: 'waiting for SSH (12.0 s)', level: 'info', at: '2026-01-01T00:00:12.000Z' }],
      }));
    await openDialog(api);
    fireEvent.change(screen.getByTestId('create-backend'), { target: { value: 'qemu' } });
    type('create-name', 'vm-2');
    fireEvent.click(screen.getByTestId('create-submit'));
    expect((await screen.findByTestId('create-progress')).textContent).toContain('waiting for SSH (12.0 s)');
    expect(api.callsOf('sandboxProgress')[0]).toEqual({ name: 'vm-2' });
    release();
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
  });
});

describe('create dialog: plugins', () => {
  it('names a plugin that did not load, with its error, beside the backend list', async () => {
    const api = new FakeApi();
    api.plugins = [
      {
        name: 'ssh',
        version: '0.1.0',
        path: '/p/ssh',
        source: 'flag',
        isolation: 'host',
        status: 'loaded',
        providers: ['ssh'],
        error: null,
        warnings: [],
      },
      {
        name: 'acme',
        version: '1.0.0',
        path: '/p/acme',
        source: 'data-dir',
        isolation: 'in-process',
        status: 'failed',
        providers: [],
        error: "Backend name 'docker' is reserved for the built-in docker backend",
        warnings: [],
      },
    ];
    await openDialog(api);
    const note = await screen.findByTestId('plugin-broken-acme');
    expect(note.textContent).toBe("Plugin acme did not load: Backend name 'docker' is reserved for the built-in docker backend");
    expect(screen.queryByTestId('plugin-broken-ssh')).toBeNull();
  });
});
