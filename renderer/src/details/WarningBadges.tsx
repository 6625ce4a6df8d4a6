import type { ExecWarning } from '../../../src/api/contract.js';
import { warningLabel, warningTitle } from '../ui/warnings.js';

/** A command's warnings as short badges (amber when the cwd is not where it was asked to be), or "none". */
export function WarningBadges({ warnings }: { warnings: ExecWarning[] }) {
  if (warnings.length === 0) return <span className="muted">none</span>;
  return (
    <span className="badges">
      {warnings.map((w, i) => {
        const { label, bad } = warningLabel(w);
        return (
          <span key={i} className={`badge ${bad ? 'badge-warn' : 'badge-info'}`} title={warningTitle(w)} data-code={w.code}>
            {label}
            {w.asked && <span className="badge-path"> {w.asked}</span>}
          </span>
        );
      })}
    </span>
  );
}
