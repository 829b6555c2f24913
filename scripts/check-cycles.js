#!/usr/bin/env node
// Fails when the service's source (src/) has an import cycle, one line per
// cycle, at two levels (docs/DEVELOPING.md#imports-flow-one-way):
//
// - files: `src/a.ts → src/b.ts → src/a.ts`;
// - modules: a top-level file of src/ (`config` for src/config.ts) or a
//   top-level folder with everything under it (`keys` for src/keys/**), so
//   src/config.ts importing src/keys/x.ts while any file of src/keys/
//   imports src/config.ts is a cycle `config → keys → config`.
//
// Every static dependency counts: `import`, `import type`, `export … from`,
// `export type … from`, `import x = require(…)` and `import('…')` with a
// literal, whether or not the compiler erases it, because a type names the
// module it comes from just as a value does. Only relative specifiers are
// followed (`./x.js` is read as `./x.ts`); packages and node: builtins are
// not part of the graph.
//
// Cycles are the graph's strongly connected components (Tarjan's
// algorithm), each printed as one cycle through all its members where one
// exists, else as its members: a component of several files may hold many
// simple cycles, and listing them all would be long without saying more.
//
// Hand-written on the TypeScript compiler the project already has rather
// than madge or dependency-cruiser: the graph is one pass over the files'
// import declarations, the module-level rule is the project's own, and the
// project gains no dependency.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const SOURCE = /\.(?:ts|mts|cts|tsx)$/
const DECLARATION = /\.d\.(?:ts|mts|cts)$/

/**
 * The import cycles under `root`/`folder`, file level then module level,
 * one line each, sorted within each level.
 * @param {string} root the project's root; paths are printed relative to it
 * @param {string} [folder] the folder whose files form the graph
 * @returns {string[]}
 */
export function checkCycles (root, folder = 'src') {
  root = resolve(root)
  const base = join(root, folder)
  const files = sourceFiles(base)
  const fileGraph = new Map(files.map((file) => [file, dependencies(file)]))
  const name = (file) => relative(root, file).split(sep).join('/')
  const moduleOf = (file) => {
    const first = relative(base, file).split(sep)[0] ?? ''
    return first.replace(SOURCE, '')
  }
  const moduleGraph = new Map()
  for (const [file, targets] of fileGraph) {
    const from = moduleOf(file)
    if (!moduleGraph.has(from)) moduleGraph.set(from, new Set())
    for (const target of targets) {
      const to = moduleOf(target)
      if (to !== from) moduleGraph.get(from).add(to)
    }
  }
  const fileCycles = cycles(fileGraph).map((cycle) => `files: ${cycle.map(name).join(' → ')}`)
  const moduleCycles = cycles(moduleGraph).map((cycle) => `modules: ${cycle.join(' → ')}`)
  return [...fileCycles.sort(), ...moduleCycles.sort()]
}

/** @param {string} folder @returns {string[]} every source file under it, sorted */
function sourceFiles (folder) {
  const found = []
  for (const entry of readdirSync(folder).sort()) {
    const path = join(folder, entry)
    if (statSync(path).isDirectory()) found.push(...sourceFiles(path))
    else if (SOURCE.test(entry) && !DECLARATION.test(entry)) found.push(path)
  }
  return found
}

/**
 * The project files that `file` names in its imports and re-exports.
 * @param {string} file
 * @returns {Set<string>}
 */
function dependencies (file) {
  const text = readFileSync(file, 'utf8')
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false)
  const targets = new Set()
  const add = (specifier) => {
    const target = resolveSpecifier(file, specifier)
    if (target !== undefined) targets.add(target)
  }
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
        node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text)
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) &&
        ts.isStringLiteral(node.moduleReference.expression)) {
      add(node.moduleReference.expression.text)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] !== undefined && ts.isStringLiteralLike(node.arguments[0])) {
      add(node.arguments[0].text)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)) {
      // `import('./x.js').Name` in a type position.
      add(node.argument.literal.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return targets
}

/**
 * The source file a relative specifier names, the way NodeNext resolution
 * reads it (`./x.js` from `./x.ts`), or undefined for a package or a file
 * that is not there.
 * @param {string} from
 * @param {string} specifier
 * @returns {string | undefined}
 */
function resolveSpecifier (from, specifier) {
  if (!specifier.startsWith('./') && !specifier.startsWith('../')) return undefined
  const path = resolve(dirname(from), specifier)
  const candidates = [
    path.replace(/\.js$/, '.ts'), path.replace(/\.mjs$/, '.mts'), path.replace(/\.cjs$/, '.cts'),
    path, `${path}.ts`, join(path, 'index.ts')
  ]
  return candidates.find((candidate) => SOURCE.test(candidate) && existsSync(candidate) && statSync(candidate).isFile())
}

/**
 * Every strongly connected component of more than one node (or of one node
 * that depends on itself), each as a closed walk `a → … → a`.
 * @template T
 * @param {Map<T, Set<T>>} graph
 * @returns {T[][]}
 */
function cycles (graph) {
  const index = new Map()
  const low = new Map()
  const stack = []
  const onStack = new Set()
  const components = []
  let next = 0
  // Iterative Tarjan: src/ is small, but a recursive walk's depth is the
  // longest import chain, and a plain loop has no such limit.
  for (const start of graph.keys()) {
    if (index.has(start)) continue
    const work = [{ node: start, targets: [...(graph.get(start) ?? [])], at: 0 }]
    index.set(start, next); low.set(start, next); next++
    stack.push(start); onStack.add(start)
    while (work.length > 0) {
      const frame = work[work.length - 1]
      if (frame.at < frame.targets.length) {
        const target = frame.targets[frame.at++]
        if (!index.has(target)) {
          index.set(target, next); low.set(target, next); next++
          stack.push(target); onStack.add(target)
          work.push({ node: target, targets: [...(graph.get(target) ?? [])], at: 0 })
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)))
        }
        continue
      }
      work.pop()
      const parent = work[work.length - 1]
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node), low.get(frame.node)))
      if (low.get(frame.node) !== index.get(frame.node)) continue
      const component = []
      let member
      do {
        member = stack.pop()
        onStack.delete(member)
        component.push(member)
      } while (member !== frame.node)
      const selfLoop = component.length === 1 && (graph.get(frame.node)?.has(frame.node) ?? false)
      if (component.length > 1 || selfLoop) components.push(walk(graph, component))
    }
  }
  return components
}

/**
 * A closed walk through a component, starting at its first member in sort
 * order: the shortest path back to the start from each member in turn, so
 * that a two-node cycle reads `a → b → a` and a longer one names each step.
 * @template T
 * @param {Map<T, Set<T>>} graph
 * @param {T[]} component
 * @returns {T[]}
 */
function walk (graph, component) {
  const members = new Set(component)
  const sorted = [...component].sort()
  const start = sorted[0]
  const path = [start]
  const unvisited = new Set(sorted.slice(1))
  let at = start
  // Visit the members in sort order by shortest paths inside the component,
  // then return to the start; every step is an import.
  for (const goal of [...sorted.slice(1), start]) {
    if (goal !== start && !unvisited.has(goal)) continue
    const steps = shortestPath(graph, members, at, goal)
    for (const step of steps) {
      path.push(step)
      unvisited.delete(step)
    }
    at = goal
  }
  return path
}

/** @template T @param {Map<T, Set<T>>} graph @param {Set<T>} members @param {T} from @param {T} to @returns {T[]} the nodes after `from` up to `to` */
function shortestPath (graph, members, from, to) {
  const previous = new Map([[from, undefined]])
  const queue = [from]
  while (queue.length > 0) {
    const node = queue.shift()
    for (const target of graph.get(node) ?? []) {
      if (!members.has(target)) continue
      if (target === to) {
        const steps = [to]
        for (let back = node; back !== from; back = previous.get(back)) steps.unshift(back)
        return steps
      }
      if (!previous.has(target)) {
        previous.set(target, node)
        queue.push(target)
      }
    }
  }
  return [to]
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
  const problems = checkCycles(root)
  for (const problem of problems) console.error(problem)
  if (problems.length > 0) {
    console.error(`${problems.length} import cycle${problems.length === 1 ? '' : 's'} in src/ (docs/DEVELOPING.md#imports-flow-one-way)`)
    process.exitCode = 1
  }
}
