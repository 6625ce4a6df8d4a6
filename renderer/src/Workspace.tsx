import type { SandboxInfo } from '../../src/api/contract.js';
import { ScreenPane } from './ScreenPane.js';
import { SplitView } from './SplitView.js';
import { TerminalPane, type TerminalTabs } from './TerminalPane.js';

interface Props {
  sandbox: SandboxInfo;
  visible: boolean;
  tabs: TerminalTabs;
  onAddTab: (session?: string) => void;
  onCloseTab: (session: string) => void;
  onActivateTab: (session: string) => void;
}

/** The desktop and the terminals of one sandbox, side by side. */
export function Workspace({ sandbox, visible, tabs, onAddTab, onCloseTab, onActivateTab }: Props) {
  if (sandbox.state !== 'running') {
    return (
      <div className="center empty workspace-off">
        <p>
          <b>{sandbox.name}</b> is {sandbox.state}
          {sandbox.stateDetail ? ` (${sandbox.stateDetail})` : ''}.
        </p>
        <p className="muted">
          {sandbox.state === 'missing'
            ? 'It no longer exists in its backend; remove it and create it again.'
            : sandbox.state === 'unavailable'
              ? `Its backend cannot be asked right now: ${sandbox.stateDetail ?? 'no reason given'}`
              : sandbox.operation
                ? 'Its terminals and desktop open once it is ready (see its progress in Details or the sidebar).'
                : 'Start it (Start, above) to open its terminals and desktop.'}
        </p>
      </div>
    );
  }
  if (!sandbox.supportsStreams) {
    return (
      <div className="center empty">
        <p>The {sandbox.backend} backend has no interactive streams: no terminal or desktop here.</p>
        <p className="muted">Use the CLI: sandbox-desk exec {sandbox.name} -- COMMAND</p>
      </div>
    );
  }
  return (
    <SplitView
      storageKey="sdesk.split"
      left={<ScreenPane sandbox={sandbox.name} visible={visible} />}
      right={
        <TerminalPane
          sandbox={sandbox.name}
          visible={visible}
          tabs={tabs}
          onAdd={onAddTab}
          onClose={onCloseTab}
          onActivate={onActivateTab}
        />
      }
    />
  );
}
