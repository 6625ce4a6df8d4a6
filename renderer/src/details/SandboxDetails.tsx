import { useState, type ReactNode } from 'react';
import { PathText } from '../ui/PathText.js';
import type { SandboxInfo, SessionInfo } from '../../../src/api/contract.js';
import { ISOLATION_LABEL } from '../../../src/shared/isolation.js';
import { useApi } from '../app/api-context.js';
import { CallLog } from './CallLog.js';
import { CheckpointsPanel } from '../checkpoints/CheckpointsPanel.js';
import { FileDropZone } from '../files/FileDropZone.js';
import { FilesPanel } from '../files/FilesPanel.js';
import { NetworkPanel } from '../network/NetworkPanel.js';
import { Ago } from '../ui/Ago.js';
import { usePoll } from '../hooks/usePoll.js';
import { touches } from '../events/topics.js';
import { SessionsTable } from './SessionsTable.js';
import { SandboxResources } from './ResourceGraph.js';

interface Props {
  sandbox: SandboxInfo;
  /** Polling stops while another view is shown. */
  visible: boolean;
  onOpenTerminal: (session: string) => void;
}

const NOT_YET = 'resolved after connect';

/**
 * Where things are in a sandbox: the declared and resolved homes and defaults, the environment's
 * last observed cwd, and every session's own record — each labelled with the layer it belongs to —
 * then the agent calls that moved them.
 */
export function SandboxDetails({ sandbox: s, visible, onOpenTerminal }: Props) {
  const api = useApi();
  const sessions = usePoll<SessionInfo[]>(() => api.call('listSessions', { sandbox: s.name }), 2000, s.name, visible, {
    live: touches.sessionsOf(s.name),
  });
  // Which session the agent calls are filtered to; remembered per sandbox, so switching sandboxes shows all.
  const [callFilter, setCallFilter] = useState<{ sandbox: string; session: string | null }>({ sandbox: s.name, session: null });
  const callSession = callFilter.sandbox === s.name ? callFilter.session : null;
  const setCallSession = (session: string | null) => setCallFilter({ sandbox: s.name, session });
  const declaredIsHome = s.declaredDefaultCwd === '~' || s.declaredDefaultCwd.startsWith('~/');

  return (
    // Files dropped anywhere on the details land in the selected session's cwd (the file panel's own
    // drop area takes them into the folder it shows).
    <FileDropZone sandbox={s.name} session={callSession ?? undefined} className="details" testId="details-drop">
      <section className="card" data-testid="details-resources">
        <h3>Resources</h3>
        {visible && <SandboxResources sandbox={s.name} running={s.state === 'running'} />}
      </section>
      <section className="card">
        <h3>Directories</h3>
        <dl className="kv">
          <Row label="Home" hint="The sandbox user's home, measured inside the sandbox (cd ~ && pwd -P).">
            <span data-testid="details-home" className={s.home ? 'mono' : 'muted'}>
              {s.home ? <PathText text={s.home} /> : NOT_YET}
            </span>
          </Row>
          <Row label="Default cwd" hint="Layer c: where a command starts when its session has no record.">
            <span data-testid="details-default-cwd">
              <span className={s.defaultCwd ? 'mono' : 'muted'}>{s.defaultCwd ? <PathText text={s.defaultCwd} /> : NOT_YET}</span>
              <span className="muted small">
                {' '}
                declared <code>{s.declaredDefaultCwd}</code>
                {declaredIsHome && !s.home ? ' (the home, once measured)' : ''}
              </span>
            </span>
          </Row>
          <Row label="As given" hint="The default cwd exactly as typed at create (--default-cwd, the dialog), and what became of it.">
            <span data-testid="details-typed-cwd" className={s.defaultCwdStatus.state === 'ignored' ? 'text-warn' : 'mono'}>
              {s.defaultCwdStatus.text}
            </span>
          </Row>
          <Row label="Last observed" hint="Layer b: the cwd the environment's most recent command ended in, whichever session ran it.">
            <span data-testid="details-last-observed" className={s.lastObservedCwd ? 'mono' : 'muted'}>
              {s.lastObservedCwd ? <PathText text={s.lastObservedCwd} /> : 'nothing observed yet'}
            </span>
          </Row>
          <Row label="Temp dir">
            <span className={s.tempDir ? 'mono' : 'muted'}>{s.tempDir ? <PathText text={s.tempDir} /> : NOT_YET}</span>
          </Row>
        </dl>
      </section>

      <section className="card">
        <h3>Sandbox</h3>
        <dl className="kv">
          <Row label="Backend">
            {s.backend}
            {s.backendRef && <span className="muted mono small"> {s.backendRef.slice(0, 12)}</span>}
          </Row>
          <Row label="State">
            <span className={`state-text state-${s.state}`}>{s.state}</span>
            {s.stateSince && (
              <span className="muted">
                {' '}
                <Ago iso={s.stateSince} />
              </span>
            )}
            {s.stateDetail && <span className="muted"> — {s.stateDetail}</span>}
          </Row>
          <Row label="Image">{s.image ? <PathText text={s.image} /> : <span className="muted">none</span>}</Row>
          <Row label="User">{s.user ?? <span className="muted">image default</span>}</Row>
          <Row label="Network" hint="The network policy: open, offline, or allow (only the allow list, through the egress proxy).">
            <span data-testid="details-network">
              {s.network?.mode ?? 'open'}
              {s.network?.mode === 'allow' && <span className="muted"> — {s.network.allow.join(', ') || 'nothing allowed yet'}</span>}
            </span>
          </Row>
          <Row label="Isolation">
            {s.isolation === 'host' ? 'none — runs on this machine' : `${ISOLATION_LABEL[s.isolation]} — host paths do not exist inside`}
          </Row>
          {(s.details?.cpus !== undefined || s.details?.memoryMiB !== undefined) && s.isolation === 'container' && (
            <Row label="Limits">
              <span data-testid="details-limits">
                CPUs {String(s.details?.cpus ?? 'no limit')} · memory{' '}
                {typeof s.details?.memoryMiB === 'number' ? `${s.details.memoryMiB} MiB` : String(s.details?.memoryMiB ?? 'no limit')}
              </span>
            </Row>
          )}
          <Row label="Streams">{s.supportsStreams ? 'yes (terminal, desktop)' : 'no'}</Row>
          <Row label="Created">{new Date(s.createdAt).toLocaleString()}</Row>
        </dl>
      </section>

      <section className="card card-wide">
        <h3>
          Sessions
          <span className="muted small"> — each session's own record (a), the environment's last observed cwd (b), the default (c)</span>
        </h3>
        {sessions.error && (
          <div className="notice notice-error" role="alert">
            {sessions.error.message}
          </div>
        )}
        {sessions.loading && !sessions.data && <div className="muted">Loading sessions…</div>}
        {sessions.data && sessions.data.length === 0 && (
          <div className="empty-inline muted">
            No sessions yet. Open a terminal in the <b>Workspace</b> (Ctrl+Shift+D), or run{' '}
            <code>sandbox-desk exec {s.name} --session NAME …</code>: each session keeps its own cwd record.
          </div>
        )}
        {sessions.data && sessions.data.length > 0 && (
          <SessionsTable
            sandbox={s}
            sessions={sessions.data}
            onOpenTerminal={onOpenTerminal}
            selected={callSession}
            onSelect={setCallSession}
          />
        )}
      </section>

      <CheckpointsPanel sandbox={s} visible={visible} />
      {s.state === 'running' && <FilesPanel sandbox={s.name} session={callSession ?? undefined} visible={visible} />}
      <NetworkPanel sandbox={s.name} visible={visible} />

      <CallLog
        sandbox={s.name}
        visible={visible}
        sessions={(sessions.data ?? []).map((x) => x.key)}
        session={callSession}
        onSessionChange={setCallSession}
      />
    </FileDropZone>
  );
}

function Row({ label, hint, children }: { label: string; hint?: string; children: ReactNode }) {
  return (
    <>
      <dt title={hint}>{label}</dt>
      <dd>{children}</dd>
    </>
  );
}
