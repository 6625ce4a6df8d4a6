import { SCREEN_MODES, type ScreenMode } from './screen-view-mode.js';

interface Props {
  mode: ScreenMode;
  onMode: (mode: ScreenMode) => void;
  /** The remote desktop can be resized only by the viewer in control: say so in `resize` mode. */
  viewOnly: boolean;
  onFullscreen: () => void;
  /** Absent on the popped-out page itself. */
  onPopOut?: (() => void) | undefined;
}

/** The screen's size controls: fit / 1:1 / resize the remote to the pane, fullscreen, pop out. */
export function ScreenToolbar({ mode, onMode, viewOnly, onFullscreen, onPopOut }: Props) {
  return (
    <div className="screen-toolbar" role="toolbar" aria-label="Screen size" data-testid="screen-toolbar">
      <div className="segmented segmented-small" role="radiogroup" aria-label="Scaling">
        {SCREEN_MODES.map((m) => (
          <button
            key={m.mode}
            role="radio"
            aria-checked={mode === m.mode}
            className={mode === m.mode ? 'on' : ''}
            data-testid={`screen-mode-${m.mode}`}
            title={m.title}
            onClick={() => onMode(m.mode)}
          >
            {m.label}
          </button>
        ))}
      </div>
      {mode === 'resize' && viewOnly && (
        <span className="muted small" data-testid="resize-needs-control">
          fitted until you take control
        </span>
      )}
      <span className="spacer" />
      <button className="btn btn-small" data-testid="screen-fullscreen" title="Fullscreen (Esc leaves)" onClick={onFullscreen}>
        Fullscreen
      </button>
      {onPopOut && (
        <button className="btn btn-small" data-testid="screen-popout" title="Open the screen in a tab of its own" onClick={onPopOut}>
          Pop out
        </button>
      )}
    </div>
  );
}
