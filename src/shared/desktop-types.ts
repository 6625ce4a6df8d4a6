/** What the UI and the CLI are told about a desktop. Types only (the renderer imports them). */
export interface DesktopStatus {
  sandbox: string;
  running: boolean;
  placement: 'sandbox' | 'host' | 'refused';
  /** e.g. ":20" */
  display: string | null;
  geometry: string | null;
  leaseHolder: 'agent' | 'human';
  leaseViewer: string | null;
  /** Binaries the sandbox lacks for a desktop. */
  missing: string[];
  /** Why the desktop cannot run here, when it cannot. */
  reason: string | null;
  /** false when Chromium runs without its inner sandbox (the container blocks user namespaces). */
  chromiumSandbox: boolean | null;
}

