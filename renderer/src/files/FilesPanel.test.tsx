import '../test/setup.js';
import { act, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { FileDropZone } from './FileDropZone.js';
import { FilesPanel } from './FilesPanel.js';
import { FakeApi } from '../test/fake-api.js';

/** XMLHttpRequest faked at the boundary: records what was sent, answers as the core would. */
class FakeXhr {
  static sent: Array<{ url: string; body: unknown }> = [];
  static answer: (url: string) => { status: number; body: unknown } = () => ({ status: 200, body: {} });
  upload: { onprogress: ((e: { loaded: number }) => void) | null } = { onprogress: null };
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  status = 0;
  responseText = '';
  private url = '';
  open(_m: string, url: string) {
    this.url = url;
  }
  send(body: File) {
    FakeXhr.sent.push({ url: this.url, body });
    this.upload.onprogress?.({ loaded: body.size });
    const a = FakeXhr.answer(this.url);
    this.status = a.status;
    this.responseText = JSON.stringify(a.body);
    queueMicrotask(() => this.onload?.());
  }
}

beforeEach(() => {
  FakeXhr.sent = [];
  vi.stubGlobal('XMLHttpRequest', FakeXhr);
});
afterEach(() => vi.unstubAllGlobals());

const filesApi = () => {
  const api = new FakeApi();
  api.files['/home/dev'] = [
    { name: 'notes.txt', type: 'file', size: 2048 },
    { name: 'src', type: 'dir', size: 4096 },
  ];
  api.files['/home/dev/src'] = [{ name: 'main.c', type: 'file', size: 10 }];
  return api;
};

const dropFiles = (el: HTMLElement, files: File[]) => {
  const dataTransfer = { types: ['Files'], files, dropEffect: 'none' };
  fireEvent.dragEnter(el, { dataTransfer });
  fireEvent.dragOver(el, { dataTransfer });
  fireEvent.drop(el, { dataTransfer });
};

describe('file panel', () => {
  it("opens at the session's cwd, folders first; opens a folder and goes back up", async () => {
    const api = filesApi();
    render(
      <ApiProvider api={api}>
        <FilesPanel sandbox="alpha" session="term-1" visible />
      </ApiProvider>,
    );
    await waitFor(() => expect(screen.getAllByTestId('files-row')).toHaveLength(2));
    expect(screen.getByTestId('files-path').textContent).toBe('/home/dev');
    // The heading names the session whose cwd this is, not "the session".
    expect(screen.getByTestId('files-panel').querySelector('h3')!.textContent).toContain('session term-1’s cwd');
    expect(screen.getAllByTestId('files-row').map((r) => r.textContent)).toEqual([
      expect.stringContaining('src'),
      expect.stringContaining('notes.txt'),
    ]);
    expect(api.callsOf('listFiles')[0]).toEqual({ sandbox: 'alpha', session: 'term-1' });
    fireEvent.click(screen.getByRole('button', { name: /src/ }));
    await waitFor(() => expect(screen.getByTestId('files-path').textContent).toBe('/home/dev/src'));
    expect(screen.getAllByTestId('files-row')[0]!.textContent).toContain('main.c');
    fireEvent.click(screen.getByRole('button', { name: '↑ Up' }));
    await waitFor(() => expect(screen.getByTestId('files-path').textContent).toBe('/home/dev'));
  });

  it('makes a new folder in the folder shown; a refusal is shown with its hint', async () => {
    const api = filesApi();
    render(
      <ApiProvider api={api}>
        <FilesPanel sandbox="alpha" visible />
      </ApiProvider>,
    );
    await screen.findAllByTestId('files-row');
    fireEvent.click(screen.getByTestId('files-new-folder'));
    fireEvent.change(screen.getByLabelText('New folder name'), { target: { value: 'build' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create' }));
    await waitFor(() =>
      expect(screen.getAllByTestId('files-row').map((r) => r.textContent)).toContainEqual(expect.stringContaining('build')),
    );
    expect(api.callsOf('makeDirectory')[0]).toEqual({ sandbox: 'alpha', dir: '/home/dev', name: 'build' });

    api.fail('makeDirectory', 'invalid_input', 'bad folder name: the name "a/b" contains a /', 'rename it');
    fireEvent.click(screen.getByTestId('files-new-folder'));
    fireEvent.change(screen.getByLabelText('New folder name'), { target: { value: 'a/b' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create' }));
    const err = await screen.findByTestId('files-error');
    expect(err.textContent).toMatch(/contains a \/.*rename it/);
  });

  it('downloads through a single-use URL (the browser streams it to disk)', async () => {
    const api = filesApi();
    const clicks: string[] = [];
    const spy = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      clicks.push(`${this.download} ${this.href}`);
    });
    render(
      <ApiProvider api={api}>
        <FilesPanel sandbox="alpha" visible />
      </ApiProvider>,
    );
    await screen.findAllByTestId('files-row');
    fireEvent.click(screen.getByRole('button', { name: 'Download notes.txt' }));
    await waitFor(() => expect(clicks).toHaveLength(1));
    expect(clicks[0]).toMatch(/^notes\.txt http:\/\/127\.0\.0\.1:1\/files\/download\?ticket=d\d+$/);
    expect(api.callsOf('fileDownloadTicket')[0]).toEqual({ sandbox: 'alpha', path: '/home/dev/notes.txt' });
    spy.mockRestore();
  });
});

describe('dropping files', () => {
  it('two toasts at once sit in one stack, one above the other, never on top of each other', async () => {
    FakeXhr.answer = (url) => ({
      status: 200,
      body: { ok: { path: url.includes('a') ? '/home/dev/a.txt' : '/home/dev/b.txt', bytes: 1 } },
    });
    render(
      <ApiProvider api={new FakeApi()}>
        <FileDropZone sandbox="alpha" testId="zone-1">
          <div>terminal</div>
        </FileDropZone>
        <FileDropZone sandbox="alpha" testId="zone-2">
          <div>screen</div>
        </FileDropZone>
      </ApiProvider>,
    );
    await act(async () => dropFiles(screen.getByTestId('zone-1'), [new File(['a'], 'a.txt')]));
    await act(async () => dropFiles(screen.getByTestId('zone-2'), [new File(['b'], 'b.txt')]));
    await waitFor(() => expect(screen.getAllByTestId('upload-toast')).toHaveLength(2));
    // Both in the one stack (a flex column with a gap), not each fixed at the same corner.
    const stacks = new Set(screen.getAllByTestId('upload-toast').map((t) => t.parentElement));
    expect([...stacks].map((el) => el?.className)).toEqual(['toast-stack']);
  });

  it("uploads into the session's cwd and the toast says the path the sandbox measured", async () => {
    const api = new FakeApi();
    FakeXhr.answer = () => ({ status: 200, body: { ok: { path: '/home/dev/report.pdf', bytes: 3 } } });
    render(
      <ApiProvider api={api}>
        <FileDropZone sandbox="alpha" session="term-2" testId="zone">
          <div>terminal</div>
        </FileDropZone>
      </ApiProvider>,
    );
    await act(async () => dropFiles(screen.getByTestId('zone'), [new File(['abc'], 'report.pdf')]));
    const toast = await screen.findByTestId('upload-toast');
    await waitFor(() => expect(within(toast).getByTestId('upload-path').textContent).toBe('/home/dev/report.pdf'));
    expect(api.callsOf('fileUploadTicket')[0]).toEqual({ sandbox: 'alpha', session: 'term-2', name: 'report.pdf', size: 3 });
    expect(FakeXhr.sent[0]!.url).toMatch(/\/files\/upload\?ticket=/);
  });

  it('a file bigger than the free space: the toast says so, with the hint, and nothing is sent', async () => {
    const api = new FakeApi().fail(
      'fileUploadTicket',
      'no_space',
      'not enough space in /home/dev: big.iso needs 5000000000 bytes, 1000 are free',
      'free space in the sandbox; nothing was written',
    );
    render(
      <ApiProvider api={api}>
        <FileDropZone sandbox="alpha" testId="zone">
          <div>screen</div>
        </FileDropZone>
      </ApiProvider>,
    );
    await act(async () => dropFiles(screen.getByTestId('zone'), [new File(['x'], 'big.iso')]));
    const toast = await screen.findByRole('alert');
    expect(toast.textContent).toMatch(/needs 5000000000 bytes, 1000 are free.*nothing was written/);
    expect(FakeXhr.sent).toEqual([]);
  });

  it('a name with a line break is refused before asking the core; text drags are ignored', async () => {
    const api = new FakeApi();
    render(
      <ApiProvider api={api}>
        <FileDropZone sandbox="alpha" testId="zone">
          <div>details</div>
        </FileDropZone>
      </ApiProvider>,
    );
    await act(async () => dropFiles(screen.getByTestId('zone'), [new File(['x'], 'bad\nname')]));
    expect((await screen.findByRole('alert')).textContent).toMatch(/line break/);
    expect(api.callsOf('fileUploadTicket')).toEqual([]);
    fireEvent.drop(screen.getByTestId('zone'), { dataTransfer: { types: ['text/plain'], files: [] } });
    expect(api.callsOf('fileUploadTicket')).toEqual([]);
  });
});
