import { posix } from 'node:path';
import ts from 'typescript';

/**
 * The checker behind test/architecture.test.ts: which file imports which (parsed with the TypeScript
 * compiler, so comments, strings and template literals never look like imports), which layer each file
 * is in, which imports break the layer map, and the import cycles (Tarjan SCC) at file and folder level.
 * It works on an in-memory map of path → source text, so its own unit test needs no real tree.
 */

export interface ImportEdge {
  from: string;
  /** The specifier as written. */
  specifier: string;
  /** The file it resolves to (repository-relative, posix), or null when it resolves to none. */
  to: string | null;
  /** `import type`, `export type`, every named binding `type`, or an `import('…')` type node. */
  typeOnly: boolean;
  kind: 'static' | 'export' | 'dynamic';
}

/** Every relative import of one file: static imports, `export … from`, `import('…')` calls and types. */
export function scanImports(path: string, text: string): Array<Omit<ImportEdge, 'to'>> {
  const kind = path.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, kind);
  const out: Array<Omit<ImportEdge, 'to'>> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const c = node.importClause;
      const named = c?.namedBindings && ts.isNamedImports(c.namedBindings) ? c.namedBindings.elements : null;
      const typeOnly = Boolean(c && (c.isTypeOnly || (!c.name && named && named.length > 0 && named.every((e) => e.isTypeOnly))));
      out.push({ from: path, specifier: node.moduleSpecifier.text, typeOnly, kind: 'static' });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const named = node.exportClause && ts.isNamedExports(node.exportClause) ? node.exportClause.elements : null;
      const typeOnly = node.isTypeOnly || Boolean(named && named.length > 0 && named.every((e) => e.isTypeOnly));
      out.push({ from: path, specifier: node.moduleSpecifier.text, typeOnly, kind: 'export' });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push({ from: path, specifier: arg.text, typeOnly: false, kind: 'dynamic' });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push({ from: path, specifier: node.argument.literal.text, typeOnly: true, kind: 'dynamic' });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** A relative specifier → the source file it names (`./x.js` is `./x.ts` under NodeNext). Packages: undefined. */
export function resolveSpecifier(from: string, specifier: string, exists: (p: string) => boolean): string | null | undefined {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined;
  const base = posix.normalize(posix.join(posix.dirname(from), specifier));
  const stem = base.replace(/\.(js|jsx|mjs|cjs)$/, '');
  const candidates = [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${base}/index.ts`, `${base}/index.tsx`];
  // The written name first only when it is itself a source file (`import x from './y.json'` etc.).
  for (const c of /\.(ts|tsx|mts|json|css)$/.test(base) ? candidates : candidates.slice(1)) if (exists(c)) return c;
  return null;
}

/** `exists` answers for files outside `files` too (test helpers, stylesheets); default: only `files`. */
export function buildGraph(files: ReadonlyMap<string, string>, exists: (p: string) => boolean = (p) => files.has(p)): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const [path, text] of files) {
    for (const e of scanImports(path, text)) {
      const to = resolveSpecifier(path, e.specifier, (p) => files.has(p) || exists(p));
      if (to !== undefined) edges.push({ ...e, to });
    }
  }
  return edges;
}

// ---- the layer map -----------------------------------------------------------------------------------

export interface LayerSpec {
  /** Folder of the layer; `plugins/*` makes one layer per plugin folder. */
  dir: string;
  /** Layers (by name) or single files (a path ending in .ts/.tsx) this layer may import. Its own: always. */
  may: string[];
  /** Imports out of the layer must be type-only (no runtime coupling). */
  typesOnly?: boolean;
}

export interface Exception {
  from: string;
  to: string;
  why: string;
}

export interface Violation {
  from: string;
  to: string;
  rule: string;
}

export interface LayerOf {
  /** The map entry (e.g. `plugins/*`). */
  name: string;
  /** The concrete folder (e.g. `plugins/ssh`). */
  id: string;
}

export function layerOf(layers: Record<string, LayerSpec>, file: string): LayerOf | null {
  let best: LayerOf | null = null;
  let bestLen = -1;
  for (const [name, spec] of Object.entries(layers)) {
    const parts = spec.dir.split('/');
    const fileParts = file.split('/');
    if (fileParts.length <= parts.length) continue;
    if (!parts.every((p, i) => p === '*' || p === fileParts[i])) continue;
    // The most specific folder wins (src/api/contract.ts is in api, not in a broader src).
    if (parts.length > bestLen) {
      best = { name, id: fileParts.slice(0, parts.length).join('/') };
      bestLen = parts.length;
    }
  }
  return best;
}

function describeAllowed(spec: LayerSpec): string {
  return spec.may.length ? `only ${spec.may.join(', ')}` : 'nothing outside itself';
}

export interface CheckOptions {
  exceptions?: readonly Exception[];
  /** Folders a test file (`*.test.ts(x)`) may import besides its layer's own rules (shared test helpers). */
  testsMay?: readonly string[];
}

export function checkLayers(layers: Record<string, LayerSpec>, edges: readonly ImportEdge[], opts: CheckOptions = {}): Violation[] {
  const out: Violation[] = [];
  for (const e of edges) {
    const src = layerOf(layers, e.from);
    if (!src) continue;
    if (e.to === null) {
      out.push({ from: e.from, to: e.specifier, rule: 'the import resolves to no file' });
      continue;
    }
    if (opts.exceptions?.some((x) => x.from === e.from && x.to === e.to)) continue;
    const to = e.to;
    if (/\.test\.tsx?$/.test(e.from) && opts.testsMay?.some((d) => to.startsWith(`${d}/`))) continue;
    const dst = layerOf(layers, e.to);
    if (dst && dst.id === src.id) continue;
    const spec = layers[src.name]!;
    if (!dst) {
      out.push({ from: e.from, to: e.to, rule: `${src.name} may import ${describeAllowed(spec)}; ${e.to} is in no layer` });
      continue;
    }
    const allowed = spec.may.includes(e.to) || (spec.may.includes(dst.name) && !dst.name.endsWith('*'));
    if (!allowed) {
      out.push({ from: e.from, to: e.to, rule: `${src.name} may import ${describeAllowed(spec)}, not ${dst.name}` });
    } else if (spec.typesOnly && !e.typeOnly) {
      out.push({ from: e.from, to: e.to, rule: `${src.name} may import ${dst.name} for types only (use \`import type\`)` });
    }
  }
  return out;
}

// ---- cycles ------------------------------------------------------------------------------------------

/** Strongly connected components with more than one node, or a node importing itself (Tarjan). */
export function findCycles(nodes: Iterable<string>, edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  // Iterative, so a deep import chain cannot overflow the call stack.
  for (const root of nodes) {
    if (idx.has(root)) continue;
    const work: Array<{ node: string; it: Iterator<string> }> = [];
    const enter = (n: string): void => {
      idx.set(n, index);
      low.set(n, index);
      index++;
      stack.push(n);
      onStack.add(n);
      work.push({ node: n, it: (edges.get(n) ?? new Set<string>()).values() });
    };
    enter(root);
    while (work.length) {
      const top = work[work.length - 1]!;
      const next = top.it.next();
      if (!next.done) {
        const m = next.value;
        if (!idx.has(m)) enter(m);
        else if (onStack.has(m)) low.set(top.node, Math.min(low.get(top.node)!, idx.get(m)!));
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === idx.get(top.node)) {
        const scc: string[] = [];
        let m: string;
        do {
          m = stack.pop()!;
          onStack.delete(m);
          scc.push(m);
        } while (m !== top.node);
        if (scc.length > 1 || edges.get(top.node)?.has(top.node)) out.push(scc.sort());
      }
    }
  }
  return out;
}

function adjacency(pairs: Iterable<[string, string]>): Map<string, Set<string>> {
  const m = new Map<string, Set<string>>();
  for (const [a, b] of pairs) {
    if (!m.has(a)) m.set(a, new Set());
    m.get(a)!.add(b);
  }
  return m;
}

export interface Cycle {
  /** Every member of the strongly connected component. */
  members: string[];
  /** One concrete loop through it, first node repeated at the end, to show how it closes. */
  loop: string[];
}

/** The shortest loop from `start` back to itself staying inside `members` (BFS). */
function shortestLoop(start: string, members: ReadonlySet<string>, adj: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const n = queue.shift()!;
    for (const m of adj.get(n) ?? []) {
      if (!members.has(m)) continue;
      if (m === start) {
        const path = [n];
        while (path[0] !== start) path.unshift(prev.get(path[0]!)!);
        return [...path, start];
      }
      if (!prev.has(m)) {
        prev.set(m, n);
        queue.push(m);
      }
    }
  }
  return [start, start];
}

function cyclesOf(nodes: Iterable<string>, adj: ReadonlyMap<string, ReadonlySet<string>>): Cycle[] {
  return findCycles(nodes, adj).map((members) => ({ members, loop: shortestLoop(members[0]!, new Set(members), adj) }));
}

export function fileCycles(files: Iterable<string>, edges: readonly ImportEdge[]): Cycle[] {
  return cyclesOf(files, adjacency(edges.filter((e) => e.to !== null).map((e) => [e.from, e.to!] as [string, string])));
}

/** Cycles between layer folders (an import inside one folder is no cycle). */
export function folderCycles(layers: Record<string, LayerSpec>, edges: readonly ImportEdge[]): Cycle[] {
  const pairs: Array<[string, string]> = [];
  for (const e of edges) {
    if (e.to === null) continue;
    const a = layerOf(layers, e.from);
    const b = layerOf(layers, e.to);
    if (a && b && a.id !== b.id) pairs.push([a.id, b.id]);
  }
  const adj = adjacency(pairs);
  return cyclesOf(adj.keys(), adj);
}

export function formatViolation(v: Violation): string {
  return `${v.from} → ${v.to}: ${v.rule}`;
}

export function formatCycle(c: Cycle): string {
  const others = c.members.length - (c.loop.length - 1);
  return `${c.loop.join(' → ')}${others > 0 ? ` (and ${others} more member${others === 1 ? '' : 's'} in the same cycle: ${c.members.filter((m) => !c.loop.includes(m)).join(', ')})` : ''}`;
}
