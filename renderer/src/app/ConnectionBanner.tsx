import { useEventsStatus } from '../events/events-context.js';

/** Says so while the event stream is cut: the panels poll meanwhile and catch up when it is back. */
export function ConnectionBanner() {
  const status = useEventsStatus();
  if (status !== 'reconnecting') return null;
  return (
    <div className="notice notice-warn banner" role="status" data-testid="events-reconnecting">
      <span className="spinner spinner-small" aria-hidden="true" /> Reconnecting… the window shows what it last knew and catches up when the
      core answers.
    </div>
  );
}
