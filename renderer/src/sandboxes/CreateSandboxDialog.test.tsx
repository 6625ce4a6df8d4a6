import '../test/setup.js';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../app/api-client.js';
import { App } from '../app/App.js';
import { FakeApi, sandboxInfo } from '../test/fake-api.js';

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
      throw new ApiError(
        'image_not_found',
        `Image ${p.image} does not exist in the Docker engine`,
        'build it (`sandbox-desk image build --tag sandbox-desk/nope:latest FOLDER`)',
      );
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
    expect(error.textContent).toContain('sandbox-desk image build');
    // Next to the image field, not at the bottom of the form.
    expect(error.closest('.field')?.querySelector('[data-testid="create-image"]')).toBeTruthy();
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
      {
        name: 'qemu',
        description: 'a QEMU virtual machine',
        isContainer: true,
        isolation: 'virtual-machine',
        supportsStreams: true,
        defaultCwd: '~',
      },
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

describe('create dialog: images, backends, advanced', () => {
  it('labels each backend by its isolation', async () => {
    const api = new FakeApi();
    api.backends = [
      ...api.backends,
      { name: 'qemu', description: 'a VM', isContainer: true, isolation: 'virtual-machine', supportsStreams: true, defaultCwd: '~' },
    ];
    await openDialog(api);
    const labels = [...screen.getByTestId<HTMLSelectElement>('create-backend').options].map((o) => o.textContent);
    expect(labels).toEqual(['docker (container)', 'local (this machine)', 'qemu (virtual machine)']);
  });

  it('picks the image from the engine list, per backend, and offers none for local', async () => {
    const api = new FakeApi();
    await openDialog(api);
    const pick = await screen.findByTestId<HTMLSelectElement>('create-image-pick');
    const options = [...pick.options].map((o) => o.value).filter(Boolean);
    expect(options).toEqual(['sandbox-desk/base:latest', 'sandbox-desk/desktop:latest']);
    fireEvent.change(pick, { target: { value: 'sandbox-desk/desktop:latest' } });
    expect(screen.getByTestId<HTMLInputElement>('create-image').value).toBe('sandbox-desk/desktop:latest');
    fireEvent.change(screen.getByTestId('create-backend'), { target: { value: 'local' } });
    expect(screen.queryByTestId('create-image')).toBeNull();
    expect(screen.queryByTestId('create-user')).toBeNull();
  });

  it('says "did you mean" for a typed name close to one in the list', async () => {
    const api = new FakeApi();
    await openDialog(api);
    await screen.findByTestId('create-image-pick');
    type('create-image', 'sandbox-desk/destkop');
    expect(screen.getByTestId('create-image-suggestion').textContent).toMatch(/Did you mean sandbox-desk\/desktop:latest\?/);
    fireEvent.click(within(screen.getByTestId('create-image-suggestion')).getByRole('button'));
    expect(screen.getByTestId<HTMLInputElement>('create-image').value).toBe('sandbox-desk/desktop:latest');
    type('create-image', 'sandbox-desk/base');
    expect(screen.queryByTestId('create-image-suggestion')).toBeNull();
  });

  it('sends mounts, environment, docker CPU/memory limits and --desktop from Advanced', async () => {
    const api = new FakeApi();
    await openDialog(api);
    type('create-name', 'lim');
    type('create-mounts', '/src:/work:ro');
    type('create-env', 'A=1');
    type('create-cpus', '1.5');
    type('create-memory', '512');
    fireEvent.click(screen.getByTestId('create-desktop'));
    fireEvent.click(screen.getByTestId('create-submit'));
    await waitFor(() => expect(api.callsOf('createSandbox')).toHaveLength(1));
    expect(api.callsOf('createSandbox')[0]).toEqual({
      name: 'lim',
      backend: 'docker',
      mounts: [{ hostPath: '/src', sandboxPath: '/work', readOnly: true }],
      env: { A: '1' },
      options: { cpus: '1.5', memory: '512', desktop: 'true' },
    });
  });

  it('refuses a malformed mount line under Advanced without calling the server', async () => {
    const api = new FakeApi();
    await openDialog(api);
    type('create-name', 'bad');
    type('create-mounts', 'relative:/x');
    fireEvent.click(screen.getByTestId('create-submit'));
    expect((await screen.findByTestId('create-error')).textContent).toMatch(/line 1: "relative:\/x" is not HOST:SANDBOX/);
    expect(api.callsOf('createSandbox')).toEqual([]);
  });
});
