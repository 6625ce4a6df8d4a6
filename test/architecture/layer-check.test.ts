import { describe, expect, it } from 'vitest';
import {
  buildGraph,
  checkLayers,
  fileCycles,
  folderCycles,
  formatCycle,
  formatViolation,
  scanImports,
  type LayerSpec,
} from './layer-check.js';

const LAYERS: Record<string, LayerSpec> = {
  low: { dir: 'src/low', may: [] },
  high: { dir: 'src/high', may: ['low'] },
  ui: { dir: 'ui', may: ['src/high/contract.ts'] },
  plugins: { dir: 'plugins/*', may: ['low'], typesOnly: true },
};

describe('layer checker (in-memory tree)', () => {
  it('reads static imports, export-from, dynamic import() and import types, not comments or strings', () => {
    const found = scanImports(
      'src/a.ts',
      [
        "import { x } from './x.js';",
        "import type { T } from './t.js';",
        "import { type U, type V } from './uv.js';",
        "export * from './e.js';",
        "export type { W } from './w.js';",
        "const m = await import('./dyn.js');",
        "let t: import('./it.js').T;",
        "// import { no } from './comment.js';",
        'const s = "import { no } from \'./string.js\'";',
        'const tpl = `${"x"} import("./template.js")`;',
      ].join('\n'),
    );
    expect(found.map((e) => [e.specifier, e.kind, e.typeOnly])).toEqual([
      ['./x.js', 'static', false],
      ['./t.js', 'static', true],
      ['./uv.js', 'static', true],
      ['./e.js', 'export', false],
      ['./w.js', 'export', true],
      ['./dyn.js', 'dynamic', false],
      ['./it.js', 'dynamic', true],
    ]);
  });

  it('reports an upward import, an import of a file outside the allowed list and a runtime import from a plugin', () => {
    const files = new Map([
      ['src/low/a.ts', "import { b } from '../high/b.js';\nexport const a = 1;"],
      ['src/high/b.ts', "import { a } from '../low/a.js';\nexport const b = a;"],
      ['src/high/contract.ts', 'export type C = 1;'],
      ['ui/view.tsx', "import type { C } from '../src/high/contract.js';\nimport { b } from '../src/high/b.js';"],
      [
        'plugins/p/src/index.ts',
        "import type { A } from '../../../src/low/a.js';\nimport { a } from '../../../src/low/a.js';\nimport { own } from './own.js';",
      ],
      ['plugins/p/src/own.ts', 'export const own = 1;'],
      ['src/high/missing.ts', "import { gone } from './gone.js';"],
    ]);
    const violations = checkLayers(LAYERS, buildGraph(files)).map(formatViolation);
    expect(violations).toEqual([
      'src/low/a.ts → src/high/b.ts: low may import nothing outside itself, not high',
      'ui/view.tsx → src/high/b.ts: ui may import only src/high/contract.ts, not high',
      'plugins/p/src/index.ts → src/low/a.ts: plugins may import low for types only (use `import type`)',
      'src/high/missing.ts → ./gone.js: the import resolves to no file',
    ]);
  });

  it('honours an exception and what test files may import', () => {
    const files = new Map([
      ['src/low/a.ts', "import { b } from '../high/b.js';"],
      ['src/low/a.test.ts', "import { helper } from '../../test/helper.js';"],
      ['src/low/c.ts', "import { helper } from '../../test/helper.js';"],
      ['src/high/b.ts', 'export const b = 1;'],
    ]);
    const edges = buildGraph(files, (p) => p === 'test/helper.ts');
    const violations = checkLayers(LAYERS, edges, {
      exceptions: [{ from: 'src/low/a.ts', to: 'src/high/b.ts', why: 'test' }],
      testsMay: ['test'],
    });
    expect(violations.map(formatViolation)).toEqual([
      'src/low/c.ts → test/helper.ts: low may import nothing outside itself; test/helper.ts is in no layer',
    ]);
  });

  it('finds file cycles (Tarjan) and prints a concrete loop', () => {
    const files = new Map([
      ['src/low/a.ts', "import './b.js';"],
      ['src/low/b.ts', "import './c.js';"],
      ['src/low/c.ts', "import './a.js';\nimport './d.js';"],
      ['src/low/d.ts', "import './d.js';"],
      ['src/low/e.ts', "import './a.js';"],
    ]);
    const cycles = fileCycles(files.keys(), buildGraph(files));
    expect(cycles.map((c) => c.members)).toEqual([['src/low/d.ts'], ['src/low/a.ts', 'src/low/b.ts', 'src/low/c.ts']]);
    expect(cycles.map(formatCycle)).toEqual(['src/low/d.ts → src/low/d.ts', 'src/low/a.ts → src/low/b.ts → src/low/c.ts → src/low/a.ts']);
  });

  it('finds folder cycles, and none for imports inside one folder', () => {
    const files = new Map([
      ['src/low/a.ts', "import '../high/b.js';\nimport './a2.js';"],
      ['src/low/a2.ts', "import './a.js';"],
      ['src/high/b.ts', "import '../low/a.js';"],
    ]);
    expect(folderCycles(LAYERS, buildGraph(files)).map(formatCycle)).toEqual(['src/high → src/low → src/high']);
  });

  it('has no cycle on an acyclic graph', () => {
    const files = new Map([
      ['src/low/a.ts', 'export const a = 1;'],
      ['src/high/b.ts', "import '../low/a.js';"],
    ]);
    const edges = buildGraph(files);
    expect(fileCycles(files.keys(), edges)).toEqual([]);
    expect(folderCycles(LAYERS, edges)).toEqual([]);
    expect(checkLayers(LAYERS, edges)).toEqual([]);
  });
});
