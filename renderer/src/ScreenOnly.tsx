import type { ApiClient } from '../../src/api/contract.js';
import { ApiProvider } from './api-context.js';
import { ScreenPane } from './ScreenPane.js';

/**
 * The popped-out screen (`?screen=NAME`): one sandbox's desktop filling the tab. It is a viewer of its
 * own — its own viewer id, its own single-use tickets — so the window it came from keeps its view too.
 */
export function ScreenOnly({ api, sandbox }: { api: ApiClient; sandbox: string }) {
  document.title = `${sandbox} — screen — Sandbox Desk`;
  return (
    <ApiProvider api={api}>
      <div className="screen-only" data-testid="screen-only">
        <ScreenPane sandbox={sandbox} visible standalone />
      </div>
    </ApiProvider>
  );
}
