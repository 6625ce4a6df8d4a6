import '../test/setup.js';
import { act, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AgentActionView } from '../../../src/api/contract.js';
import { AgentActionOverlay, AGENT_ACTION_SHOWN_MS } from './AgentActionOverlay.js';

const view = (over: Partial<AgentActionView> = {}): AgentActionView => ({
  sandbox: 'alpha',
  at: new Date().toISOString(),
  kind: 'click',
  target: { x: 639, y: 399 },
  pointer: { x: 639, y: 399 },
  screen: { width: 1280, height: 800 },
  frame: { frameId: 'abc.1280x800.1024x640.1', width: 1024, height: 640, image: 'data:image/png;base64,iVBORw0KGgo=' },
  ...over,
});

afterEach(() => vi.useRealTimers());

describe('AgentActionOverlay', () => {
  it('shows the frame the agent acted on with the click point where it aimed, then goes away', () => {
    vi.useFakeTimers();
    render(<AgentActionOverlay view={view()} />);
    expect(screen.getByTestId('agent-action-frame').getAttribute('src')).toBe('data:image/png;base64,iVBORw0KGgo=');
    const point = screen.getByTestId('agent-action-point');
    // At the centre of screen pixel (639, 399) of 1280x800.
    expect(point.style.left).toBe(`${(100 * 639.5) / 1280}%`);
    expect(point.style.top).toBe(`${(100 * 399.5) / 800}%`);
    expect(screen.getByTestId('agent-action').textContent).toMatch(/agent click at 639,399 \(frame abc\.1280x800\.1024x640\.1, 1024x640\)/);
    act(() => {
      vi.advanceTimersByTime(AGENT_ACTION_SHOWN_MS + 10);
    });
    expect(screen.queryByTestId('agent-action')).toBeNull();
  });

  it('shows nothing for an action older than a few seconds, and no point for typing', () => {
    const { rerender } = render(<AgentActionOverlay view={view({ at: new Date(Date.now() - AGENT_ACTION_SHOWN_MS - 1).toISOString() })} />);
    expect(screen.queryByTestId('agent-action')).toBeNull();
    rerender(<AgentActionOverlay key="typed" view={view({ kind: 'type', target: null, frame: null })} />);
    expect(screen.getByTestId('agent-action').textContent).toBe('agent type');
    expect(screen.queryByTestId('agent-action-point')).toBeNull();
  });
});
