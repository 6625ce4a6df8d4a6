import type { SandboxInfo } from '../../../src/api/contract.js';
import { SandboxOffPane } from '../details/SandboxOffPane.js';
import { FileDropZone } from '../files/FileDropZone.js';
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
  /** Opens the create dialog for a desktop sandbox (offered when this sandbox's image has no desktop). */
  onCreateDesktopSandbox?: () => void;
  /** Opens the Logs view at a source (from the screen's crash notice). */
  onShowLogs?: (source: string) => void;
}

/** The desktop and the terminals of one sandbox, side by side. */
export function Workspace({ sandbox, visible, tabs, onAddTab, onCloseTab, onActivateTab, onCreateDesktopSandbox, onShowLogs }: Props) {
  if (sandbox.state !== 'running') return <SandboxOffPane sandbox={sandbox} />;
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
      left={
        // Dropped files land in the active terminal's session cwd, from the screen as from the terminal.
        <FileDropZone sandbox={sandbox.name} session={tabs.active ?? undefined} className="drop-fill" testId="screen-drop">
          <ScreenPane sandbox={sandbox.name} visible={visible} onCreateDesktopSandbox={onCreateDesktopSandbox} onShowLogs={onShowLogs} />
        </FileDropZone>
      }
      right={
        <FileDropZone sandbox={sandbox.name} session={tabs.active ?? undefined} className="drop-fill" testId="terminal-drop">
          <TerminalPane
            sandbox={sandbox.name}
            visible={visible}
            tabs={tabs}
            onAdd={onAddTab}
            onClose={onCloseTab}
            onActivate={onActivateTab}
          />
        </FileDropZone>
      }
    />
  );
}
