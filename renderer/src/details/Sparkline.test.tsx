import '../test/setup.js';
import { render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { EngineStatus } from '../app/EngineStatus.js';
import { formatBytes } from '../ui/format-bytes.js';
import { SandboxResources } from './ResourceGraph.js';
import { Sparkline } from './Sparkline.js';
import { FakeApi } from '../test/fake-api.js';

describe('resources', () => {
  it('draws the points scaled to the box, newest at the right', () => {
    render(<Sparkline points={[0, 50, 100]} max={100} width={10} height={12} label="cpu" testId="sp" />);
    expect(screen.getByTestId('sp').querySelector('polyline')!.getAttribute('points')).toBe('0.0,11.0 5.0,6.0 10.0,1.0');
  });
  it('shows CPU and memory of a running sandbox, nothing for a stopped one in a row', async () => {
    const api = new FakeApi();
    const { rerender } = render(
      <ApiProvider api={api}>
        <SandboxResources sandbox="alpha" running />
      </ApiProvider>,
    );
    expect((await screen.findByTestId('resources-figures-alpha')).textContent).toBe('12.5% of one core');
    rerender(
      <ApiProvider api={api}>
        <SandboxResources sandbox="alpha" running={false} compact />
      </ApiProvider>,
    );
    expect(screen.queryByTestId('resources-figures-alpha')).toBeNull();
  });
  it('shows the engine, and says when it is down', async () => {
    const api = new FakeApi();
    render(
      <ApiProvider api={api}>
        <EngineStatus />
      </ApiProvider>,
    );
    expect((await screen.findByTestId('engine-status')).textContent).toBe('Docker 26.1.5 · images 2.0 GiB');
    expect(formatBytes(512)).toBe('512 B');
  });
  it('says the engine is not reachable', async () => {
    const api = new FakeApi().on('engineInfo', () => ({
      docker: { reachable: false, error: 'connect ENOENT', endpoint: 'unix:///x', version: null, apiVersion: null, disk: null },
    }));
    render(
      <ApiProvider api={api}>
        <EngineStatus />
      </ApiProvider>,
    );
    expect((await screen.findByTestId('engine-status')).textContent).toBe('Docker not reachable');
  });
});
