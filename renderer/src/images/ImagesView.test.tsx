import '../test/setup.js';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { App } from '../app/App.js';
import { FakeApi, imageInfo } from '../test/fake-api.js';

async function openImages(api: FakeApi) {
  render(<App api={api} />);
  fireEvent.click(await screen.findByTestId('open-images'));
  await screen.findByTestId('images-view');
}

const type = (testId: string, value: string) => fireEvent.change(screen.getByTestId(testId), { target: { value } });

describe('images view', () => {
  it('lists Docker and VM images with sizes, desktop parts and users', async () => {
    const api = new FakeApi();
    api.images = [...api.images, imageInfo({ ref: 'my/tool:1', usedBy: ['agent-1'], desktop: null })];
    await openImages(api);
    const row = await screen.findByTestId('image-row-sandbox-desk/desktop:latest');
    expect(row.textContent).toMatch(/Docker.*1\.4 GiB.*yes/);
    expect(screen.getByTestId('image-row-debian-test').textContent).toMatch(/VM.*unknown/);
    expect(screen.getByTestId('image-row-my/tool:1').textContent).toMatch(/agent-1/);
  });

  it('removes an image only after confirmation, and shows a refusal with the sandbox that uses it', async () => {
    const api = new FakeApi();
    api.images = [...api.images, imageInfo({ ref: 'my/used:1', usedBy: ['agent-1'] })];
    await openImages(api);
    fireEvent.click(await screen.findByTestId('image-rm-sandbox-desk/base:latest'));
    expect(api.callsOf('removeImage')).toEqual([]);
    fireEvent.click(screen.getByTestId('image-rm-yes-sandbox-desk/base:latest'));
    await waitFor(() => expect(api.callsOf('removeImage')).toEqual([{ ref: 'sandbox-desk/base:latest' }]));
    await waitFor(() => expect(screen.queryByTestId('image-row-sandbox-desk/base:latest')).toBeNull());
    fireEvent.click(screen.getByTestId('image-rm-my/used:1'));
    fireEvent.click(screen.getByTestId('image-rm-yes-my/used:1'));
    // The notice of the first removal is still up until the refusal replaces it.
    await waitFor(() => expect(screen.getByTestId('images-notice').textContent).toMatch(/used by sandbox agent-1/));
  });

  it('builds from a folder with its steps streaming in, and Cancel stops it', async () => {
    const api = new FakeApi();
    await openImages(api);
    type('image-build-tag', 'my/tool:1');
    type('image-build-context', '/src/tool');
    fireEvent.click(screen.getByTestId('image-build-start'));
    await waitFor(() => expect(api.callsOf('buildImage')).toEqual([{ tag: 'my/tool:1', context: '/src/tool' }]));
    const task = Object.values(api.tasks)[0]!;
    task.events.push(
      { at: '', kind: 'step', text: 'FROM sandbox-desk/base:latest', step: 1, total: 2 },
      { at: '', kind: 'step', text: 'RUN make', step: 2, total: 2 },
      { at: '', kind: 'output', text: 'compiling…', step: 2, total: 2 },
    );
    await waitFor(() => expect(screen.getByTestId('image-build-status').textContent).toMatch(/Step 2\/2: RUN make/), { timeout: 3000 });
    expect(screen.getByTestId('image-build-log').textContent).toMatch(/compiling…/);
    fireEvent.click(screen.getByTestId('image-build-cancel'));
    await waitFor(() => expect(api.callsOf('cancelImageTask')).toEqual([{ id: task.id }]));
    expect((await screen.findByTestId('image-build-status')).textContent).toMatch(/Cancelled; nothing was tagged/);
  });

  it("shows a failing build's step output", async () => {
    const api = new FakeApi();
    await openImages(api);
    type('image-build-tag', 'my/bad:1');
    type('image-build-context', '/src/bad');
    fireEvent.click(screen.getByTestId('image-build-start'));
    await waitFor(() => expect(Object.keys(api.tasks)).toHaveLength(1));
    Object.assign(Object.values(api.tasks)[0]!, {
      state: 'failed',
      error: { code: 'build_failed', message: 'the build of my/bad:1 failed at step 3/4 (RUN false)\n  | boom', hint: 'fix that step' },
    });
    expect((await screen.findByTestId('image-build-error', {}, { timeout: 3000 })).textContent).toMatch(/step 3\/4[\s\S]*boom/);
  });
});
