import type { ApiClient } from '../../../src/api/contract.js';
import { ApiProvider } from '../app/api-context.js';
import { ConnectionBanner } from '../app/ConnectionBanner.js';
import type { EventsClient } from '../events/events-client.js';
import { EventsProvider } from '../events/events-context.js';
import { ScreenPane } from './ScreenPane.js';

/**
 * The popped-out screen (`?screen=NAME`): one sandbox's desktop filling the tab. It is a viewer of its
 * own — its own viewer id, its own single-use tickets — so the window it came from keeps its view too.
 * Like the main window it keeps the desktop status, the lease and the agent's last action from the
 * core's event stream (`events`), polling only while that is cut (or absent).
 */
export function ScreenOnly({ api, sandbox, events = null }: { api: ApiClient; sandbox: string; events?: EventsClient | null }) {
  document.title = `${sandbox} — screen — Sandbox Desk`;
  return (
    <ApiProvider api={api}>
      <EventsProvider events={events}>
        <div className="screen-only" data-testid="screen-only">
          <ConnectionBanner />
          <ScreenPane sandbox={sandbox} visible standalone />
        </div>
      </EventsProvider>
    </ApiProvider>
  );
}
