import { useCallback, useState } from 'react';

/**
 * What the export form holds, kept per sandbox for the window's life: changing tab unmounts the
 * replay, and a person who typed a folder and a range should find them there when they come back.
 */
export interface ExportForm {
  out: string;
  format: 'mp4' | 'webm';
  from: string;
  to: string;
}

const EMPTY: ExportForm = { out: '', format: 'mp4', from: '', to: '' };
const kept = new Map<string, ExportForm>();

export function useKeptExportForm(sandbox: string): [ExportForm, (change: Partial<ExportForm>) => void] {
  const [, rerender] = useState(0);
  const form = kept.get(sandbox) ?? EMPTY;
  const update = useCallback(
    (change: Partial<ExportForm>) => {
      kept.set(sandbox, { ...(kept.get(sandbox) ?? EMPTY), ...change });
      rerender((n) => n + 1);
    },
    [sandbox],
  );
  return [form, update];
}

/** Forgets every kept form (tests start from an empty one). */
export function forgetExportForms(): void {
  kept.clear();
}
