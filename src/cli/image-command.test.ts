import { describe, expect, it } from 'vitest';
import { eventLine, humanSize, imageTable } from './image-command.js';

describe('image command output', () => {
  it('a table with sizes, desktop and users; an empty list says how to build one', () => {
    const t = imageTable([
      {
        kind: 'docker',
        ref: 'my/tool:1',
        id: 'sha256:1',
        tags: ['my/tool:1'],
        sizeBytes: 3 * 2 ** 20,
        createdAt: '2026-12-01T20:00:00.000Z',
        usedBy: ['a', 'b'],
        desktop: true,
        origin: 'app',
        path: null,
        derivedFrom: null,
      },
    ]);
    expect(t.split('\n')[0]).toMatch(/^KIND\s+IMAGE\s+SIZE\s+CREATED\s+DESKTOP\s+USED BY$/);
    expect(t.split('\n')[1]).toMatch(/^docker\s+my\/tool:1\s+3\.0 MiB\s+2026-12-01 20:00\s+yes\s+a, b$/);
    expect(imageTable([])).toMatch(/image build --tag NAME FOLDER/);
  });

  it('steps stand out, output is indented under them', () => {
    expect(eventLine({ at: '', kind: 'step', text: 'RUN make', step: 2, total: 3 })).toBe('step 2/3: RUN make\n');
    expect(eventLine({ at: '', kind: 'output', text: 'cc -o x' })).toBe('  | cc -o x\n');
    expect(humanSize(2 ** 30)).toBe('1.0 GiB');
  });
});
