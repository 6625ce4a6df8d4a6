import type { DesktopStatus } from '../../../src/api/contract.js';

/**
 * Says that the desktop died inside the sandbox (Xvnc killed, the launcher gone) rather than being
 * stopped — pushed by the core as it happened (`desktop` event, cause crashed) — when, and where its
 * log is: the Logs view's "Desktop launcher" source (a link where the window has that view), and the
 * same from the CLI.
 */
export function DesktopCrashNotice({
  sandbox,
  ended,
  onShowLogs,
}: {
  sandbox: string;
  ended: NonNullable<DesktopStatus['ended']>;
  onShowLogs?: ((source: string) => void) | undefined;
}) {
  const at = new Date(ended.at);
  return (
    <div className="notice notice-error" role="alert" data-testid="desktop-crashed">
      <strong>The desktop crashed</strong> at {Number.isNaN(at.getTime()) ? ended.at : at.toLocaleTimeString()}: {ended.detail}.
      <div className="hint">
        {onShowLogs ? (
          <button type="button" className="btn btn-small" data-testid="desktop-crash-log" onClick={() => onShowLogs('desktop')}>
            Show the desktop launcher's log
          </button>
        ) : (
          <>Its log: </>
        )}{' '}
        <span className="mono">sandbox-desk logs {sandbox} --source desktop</span>
      </div>
    </div>
  );
}
