import { useEffect, useRef, useState } from 'react';

interface Props {
  tabs: string[];
  active: string | null;
  onActivate: (tab: string) => void;
}

/**
 * Every terminal tab in one list: the tab bar shrinks its tabs (with an ellipsis) rather than scroll,
 * so a tab too narrow to read — or out of sight — is one click (or Enter) away here.
 */
export function TabOverflowMenu({ tabs, active, onActivate }: Props) {
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent) => {
      if (!ref.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener('mousedown', close);
    return () => document.removeEventListener('mousedown', close);
  }, [open]);
  if (tabs.length < 2) return null;
  return (
    <div className="tab-menu" ref={ref}>
      <button
        className="btn-icon"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-label="All terminal tabs"
        title="All terminal tabs"
        data-testid="terminal-tab-menu"
        onClick={() => setOpen((o) => !o)}
      >
        ⌄ {tabs.length}
      </button>
      {open && (
        <ul className="tab-menu-list" role="menu" onKeyDown={(e) => e.key === 'Escape' && setOpen(false)}>
          {tabs.map((t) => (
            <li key={t} role="none">
              <button
                role="menuitemradio"
                aria-checked={t === active}
                className="tab-menu-item mono"
                data-testid={`terminal-tab-menu-${t}`}
                onClick={() => {
                  onActivate(t);
                  setOpen(false);
                }}
              >
                {t}
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
