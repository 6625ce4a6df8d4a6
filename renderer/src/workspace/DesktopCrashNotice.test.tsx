import '../test/setup.js';
import { fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { ApiProvider } from '../app/api-context.js';
import { ScreenPane } from './ScreenPane.js';
import { desktopStatus, FakeApi } from '../test/fake-api.js';

vi.mock('@novnc/novnc', () => ({ default: class FakeRFB extends EventTarget {} }));

describe('a desktop that crashed', () => {
  it('says so, why and when, and links the desktop launcher log', async () => {
    const api = new FakeApi({
      desktops: {
        alpha: desktopStatus({
          sandbox: 'alpha',
          running: false,
          ended: {
            how: 'crashed',
            at: '2026-01-01T00:00:00.000Z',
            detail: 'Xvnc closed its RFB socket and the desktop is no longer running',
          },
        }),
      },
    });
    const onShowLogs = vi.fn();
    render(
      <ApiProvider api={api}>
        <ScreenPane sandbox="alpha" visible onShowLogs={onShowLogs} />
      </ApiProvider>,
    );
    const notice = await screen.findByTestId('desktop-crashed');
    expect(notice.textContent).toMatch(/The desktop crashed at .*: Xvnc closed its RFB socket/);
    fireEvent.click(screen.getByTestId('desktop-crash-log'));
    expect(onShowLogs).toHaveBeenCalledWith('desktop');
    // Start is still offered (a start clears the crash).
    expect(screen.getByTestId('desktop-start')).toBeTruthy();
  });

  it('a desktop stopped on purpose shows no crash', async () => {
    const api = new FakeApi({ desktops: { alpha: desktopStatus({ sandbox: 'alpha', running: false }) } });
    render(
      <ApiProvider api={api}>
        <ScreenPane sandbox="alpha" visible />
      </ApiProvider>,
    );
    await screen.findByTestId('desktop-start');
    expect(screen.queryByTestId('desktop-crashed')).toBeNull();
  });
});
