#!/usr/bin/env node
// Fails when the project's markdown (README.md, docs/, client/README.md and
// any other .md outside node_modules and the build's outputs) names
// something that is not there, one line per problem, `file:line: what`:
//
// - a repository path, in a code span, a shell code block or a relative
//   link: `src/http/edge.ts`, `scripts/services/`, (KEYS.md#leaked-tokens)
//   (links resolve from the doc's folder, code from the root or the doc's
//   folder). `:12` and `:12-30` suffixes are dropped. A build output,
//   `dist/src/x.js` or `client/dist/x.js`, is checked as its source
//   (`src/x.ts`, `client/src/x.ts`): dist/ exists only after a build.
//   What counts as a path: a word with a `/`, made of letters, digits, `.`,
//   `_` and `-` only, whose first folder is one of the repository's (not a
//   gitignored output such as data/) or that ends in a source extension.
//   So URLs, API paths (`/v1/pets`), absolute paths (`/proc`, `/var/lib/…`),
//   globs, MIME types and bare example names (`backup.db`) are left alone;
//   so is a bare file name (`framing.ts`), which names a file in context.
// - an anchor (`#section`) into a project doc with no such heading, by
//   GitHub's slugs (lower case, punctuation dropped, spaces to `-`, `-1`,
//   `-2` for repeats; `<a id>` and `<a name>` count too).
// - `npm run NAME`, `npm test`, `npm start` in code naming a script that the
//   package.json it runs in lacks (the root's, the workspace's of
//   `-w`/`--workspace`, the folder's after `cd`; a doc inside a package,
//   such as client/README.md, may name that package's scripts or the root's).
// - `petstore SUB [SUB2]` at the start of a command, or `node …bin/petstore.js
//   SUB`, naming a command the CLI does not have: the commands are read from
//   the compiled program (dist/src/cli/program.js), so this runs after
//   `npm run build` (`npm test`'s pretest).
// - `npx petstore`, anywhere: outside the project npx fetches whatever the
//   registry has under that name and runs it. The documented ways are
//   `npm start`, `node bin/petstore.js` from the project's root (or the
//   checkout's absolute path from elsewhere) and `petstore` in the image.
//   Any other `npx NAME` whose bin is not in node_modules/.bin fails too.
// - a project-relative command (`node bin/…`, `npm run …`) after a `cd` to
//   an absolute folder in the same code block: it would not run from there.
//
// Not checked: prose outside code spans and links (plain-text paths and
// commands), commands not at the start of a command (`docker run … petstore
// keys create`), options of CLI commands, fenced blocks of other languages
// (js, ts, json, yaml, text output) except for `npx petstore`.
//
// A small hand-written scanner rather than a markdown parser: the docs use
// a handful of constructs (headings, fences, code spans, inline links), the
// checks are about the text inside them, and the project gains no dependency.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const SHELL_FENCES = new Set(['', 'sh', 'bash', 'shell', 'console', 'zsh', 'cron'])
const SOURCE_EXTENSIONS = /\.(?:ts|js|cjs|mjs|json|jsonc|md|yaml|yml|cfg|html|css|sh)$/
const PATH_WORD = /^(?:\.\/)?[\w.-]+(?:\/[\w.-]*)+$/
const LINE_SUFFIX = /:\d+(?:-\d+)?$/
const NPM_SCRIPT_COMMANDS = new Set(['test', 'start', 'stop', 'restart'])
/** Stands for a space inside quotes while a line is split into words. */
const QUOTED_SPACE = '\u0000'
const NPM_OPTIONS_WITH_VALUE = new Set(['-w', '--workspace', '--prefix'])

/**
 * The problems in the markdown under `root`, one `file:line: what` each,
 * sorted. `commands` (top-level command name → its subcommands' names)
 * replaces the commands read from the compiled CLI.
 * @param {string} root
 * @param {{ commands?: Record<string, string[]> }} [options]
 * @returns {Promise<string[]>}
 */
export async function checkDocs (root, options = {}) {
  root = resolve(root)
  const ignored = ignoredNames(root)
  const rootPackage = readJson(join(root, 'package.json')) ?? {}
  const cli = options.commands !== undefined
    ? { commands: new Map(Object.entries(options.commands).map(([name, subs]) => [name, new Set(subs)])) }
    : await loadCommands(root)
  const docs = markdownFiles(root, ignored)
  const self = rootPackage.name ?? 'petstore'
  const npxSelf = new RegExp(`\\bnpx\\s+${escape(self)}\\b`)
  const npxSelfProblem = `\`npx ${self}\`: outside the project npx fetches and runs the registry's package of that name; write \`node bin/${self}.js\` (from the project's root) or \`npm start\``
  const headings = new Map()
  const slugsOf = (file) => {
    if (!headings.has(file)) headings.set(file, slugs(readFileSync(file, 'utf8')))
    return headings.get(file)
  }
  /** @type {{ file: string, line: number, message: string }[]} */
  const problems = []
  for (const file of docs) {
    const doc = relative(root, file).split(sep).join('/')
    const report = (line, message) => problems.push({ file: doc, line, message })
    const context = { root, docDir: dirname(file), ignored, rootPackage, cli, report }
    const { prose, fences } = split(readFileSync(file, 'utf8'))

    prose.forEach((text, index) => {
      if (npxSelf.test(text)) report(index + 1, npxSelfProblem)
    })
    const text = prose.join('\n')
    const lineStarts = [...text.matchAll(/\n/g)].map((newline) => newline.index + 1)
    const lineAt = (offset) => 1 + lineStarts.filter((start) => start <= offset).length
    // Code spans, then the links in what is left.
    const spans = /(`+)([^`][\s\S]*?)\1(?!`)/g
    for (const match of text.matchAll(spans)) {
      const line = lineAt(match.index)
      const code = match[2].replace(/\n/g, ' ').trim()
      if (PATH_WORD.test(code.replace(LINE_SUFFIX, ''))) checkPath(context, line, code)
      else checkCode(context, line, code, { cwd: root }, true)
    }
    const withoutSpans = text.replace(spans, (whole) => whole.replace(/[^\n]/g, ' '))
    const links = /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm
    for (const match of withoutSpans.matchAll(links)) {
      checkLink(context, lineAt(match.index), match[1] ?? match[2], slugsOf, file)
    }
    // A file named in plain prose, "(test/openapi.test.ts)": only under a folder the repository has, so that a host's path is left alone.
    const prosePaths = /(?<![\w/.@:-])((?:[\w-]+\/)+[\w.-]+\.[a-z]+)(?![\w/])/g
    for (const match of withoutSpans.replace(links, (whole) => whole.replace(/[^\n]/g, ' ')).matchAll(prosePaths)) {
      if (SOURCE_EXTENSIONS.test(match[1])) checkPath(context, lineAt(match.index), match[1], { byExtension: false })
    }
    for (const fence of fences) {
      const isShell = SHELL_FENCES.has(fence.lang)
      const shell = { cwd: root }
      for (const { line, raw } of fence.lines) {
        if (npxSelf.test(raw)) report(line, npxSelfProblem)
        if (!isShell) continue
        const code = fence.lang === 'cron' ? raw.trim().split(/\s+/).slice(5).join(' ') : raw.replace(/(^|\s)#.*$/, '')
        checkCode(context, line, code, shell, false)
      }
    }
  }
  return problems
    .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line))
    .map(({ file, line, message }) => `${file}:${line}: ${message}`)
}

/** Each line, blank inside fenced blocks, and the fenced blocks with their lines. */
function split (source) {
  const prose = []
  const fences = []
  let open
  source.split('\n').forEach((raw, index) => {
    const line = index + 1
    const marker = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(raw)
    if (open === undefined && marker !== null) {
      open = { char: marker[1][0], length: marker[1].length, lang: marker[2].toLowerCase(), lines: [] }
      prose.push('')
    } else if (open !== undefined) {
      const close = /^\s*(`{3,}|~{3,})\s*$/.exec(raw)
      if (close !== null && close[1][0] === open.char && close[1].length >= open.length) {
        fences.push(open)
        open = undefined
      } else {
        open.lines.push({ line, raw })
      }
      prose.push('')
    } else {
      prose.push(raw)
    }
  })
  if (open !== undefined) fences.push(open)
  return { prose, fences }
}

/** The anchors of a markdown file's headings, as GitHub makes them. */
function slugs (source) {
  const found = new Set()
  const seen = new Map()
  let fence
  for (const raw of source.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(raw)
    if (marker !== null) {
      if (fence === undefined) fence = marker[1][0]
      else if (marker[1][0] === fence) fence = undefined
      continue
    }
    if (fence !== undefined) continue
    for (const match of raw.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) found.add(match[1])
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(raw)
    if (heading === null) continue
    const base = heading[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    found.add(count === 0 ? base : `${base}-${count}`)
  }
  return found
}

function checkLink ({ root, docDir, report }, line, target, slugsOf, docFile) {
  if (/^[a-z][\w+.-]*:/i.test(target)) return
  const hash = target.indexOf('#')
  const path = decodeURI(hash === -1 ? target : target.slice(0, hash))
  const anchor = hash === -1 ? undefined : target.slice(hash + 1)
  const file = path === '' ? docFile : path.startsWith('/') ? join(root, path) : join(docDir, path)
  if (!existsSync(file)) {
    report(line, `link to ${target}: ${relative(root, file).split(sep).join('/')} does not exist`)
    return
  }
  if (anchor === undefined || anchor === '' || !file.endsWith('.md') || !statSync(file).isFile()) return
  if (!slugsOf(file).has(decodeURIComponent(anchor))) {
    report(line, `link to ${target}: ${relative(root, file).split(sep).join('/')} has no heading #${anchor}`)
  }
}

/** Reports a repository path that does not exist; leaves alone a word that is no such path. */
function checkPath ({ root, docDir, ignored, report }, line, word, { byExtension = true } = {}) {
  const path = word.replace(LINE_SUFFIX, '').replace(/^\.\//, '')
  const segments = path.split('/').filter((segment) => segment !== '')
  const first = segments[0]
  if (first === undefined || first === '..' || first === '.') return
  if (first !== 'dist' && ignored.has(first)) return
  const repositoryFolder = existsSync(join(root, first))
  if (!repositoryFolder && first !== 'dist' && !(byExtension && SOURCE_EXTENSIONS.test(path))) return
  const wantsFolder = path.endsWith('/')
  const found = [root, docDir].some((base) => sources(base, segments).some((candidate) => {
    if (!existsSync(candidate)) return false
    return !wantsFolder || statSync(candidate).isDirectory()
  }))
  if (!found) report(line, `\`${word}\` does not exist${segments.includes('dist') ? ' (nor its source, for a build output)' : ''}`)
}

/** Where a path may be found: itself, or for a build output under dist/, its source. */
function sources (base, segments) {
  const at = segments.indexOf('dist')
  if (at === -1) return [join(base, ...segments)]
  const before = segments.slice(0, at)
  const after = segments.slice(at + 1)
  if (after.length === 0) return [join(base, ...before)]
  const last = after[after.length - 1]
  const names = [last, last.replace(/\.js\.map$|\.d\.ts$|\.js$/, '.ts')]
  return names.flatMap((name) => [
    join(base, ...before, ...after.slice(0, -1), name),
    join(base, ...before, 'src', ...after.slice(0, -1), name)
  ])
}

/**
 * Checks the commands of one line of shell (or one code span): paths, npm
 * scripts, petstore commands, npx, and commands after a `cd` away. `shell`
 * holds where the commands run, for the lines after: `cwd`, the folder in
 * the project, or `outside`, the `cd` that left it.
 * @param {{ cwd: string, outside?: string }} shell
 */
function checkCode (context, line, code, shell, span) {
  const { root, rootPackage, report } = context
  // A quoted string is one word (a command substitution inside double quotes aside).
  const words = code
    .replace(/'[^']*'|"[^"$]*"/g, (quoted) => quoted.replace(/\s/g, QUOTED_SPACE))
    .replace(/\$\(|&&|\|\||[;|`]/g, ' ; ')
    .split(/\s+/)
    .filter((word) => word !== '')
    .map((word) => word.replaceAll(QUOTED_SPACE, ' ').replace(/^['"]+|['"]+$/g, ''))
  let start = true
  for (let i = 0; i < words.length; i++) {
    const word = words[i]
    const bare = word.replace(/[.,:;)]+$/, '')
    if (PATH_WORD.test(bare.replace(LINE_SUFFIX, '')) || PATH_WORD.test(word.replace(LINE_SUFFIX, ''))) {
      if (shell.outside === undefined) checkPath(context, line, PATH_WORD.test(word.replace(LINE_SUFFIX, '')) ? word : bare, { byExtension: false })
    }
    if (word === ';') { start = true; continue }
    if (!start) continue
    if (/^[A-Za-z_]\w*=/.test(word) || word === 'exec' || word === 'time') continue
    if (word === 'nice') {
      if (words[i + 1] === '-n') i += 2
      else if (/^-\d+$/.test(words[i + 1] ?? '')) i += 1
      continue
    }
    start = false
    const rest = words.slice(i + 1, nextSeparator(words, i + 1))
    if (word === 'cd') {
      const to = rest[0] ?? '~'
      if (shell.outside !== undefined) continue
      shell.cwd = resolve(shell.cwd, to)
      if (/^[/~$]/.test(to) || (shell.cwd !== root && !shell.cwd.startsWith(root + sep))) shell.outside = `\`cd ${to}\``
    } else if (word === 'npm') {
      checkNpm(context, line, rest, shell)
    } else if (word === 'npx') {
      checkNpx(context, line, rest, shell.outside)
    } else if (word === 'node') {
      const program = rest.find((arg) => !arg.startsWith('-'))
      if (program === undefined) continue
      if (shell.outside !== undefined && !program.startsWith('/')) {
        report(line, `\`node ${program}\` runs after ${shell.outside}, outside the project: it would not be found there (give the checkout's absolute path)`)
      }
      if (/(?:^|\/)bin\/petstore\.js$/.test(program)) checkPetstore(context, line, rest.slice(rest.indexOf(program) + 1), false)
    } else if (word === (rootPackage.name ?? 'petstore')) {
      checkPetstore(context, line, rest, span && rest.length === 1)
    }
  }
}

function nextSeparator (words, from) {
  const at = words.indexOf(';', from)
  return at === -1 ? words.length : at
}

function checkNpm ({ root, docDir, report }, line, args, { cwd, outside }) {
  let workspace
  let command
  let script
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if (arg === '--') break
    if (NPM_OPTIONS_WITH_VALUE.has(arg)) { workspace = args[++i]; continue }
    const inline = /^(?:--workspace|--prefix)=(.*)$/.exec(arg)
    if (inline !== null) { workspace = inline[1]; continue }
    if (arg.startsWith('-')) continue
    if (command === undefined) command = arg
    else if (script === undefined && (command === 'run' || command === 'run-script')) script = arg
  }
  if (command === undefined) return
  if (NPM_SCRIPT_COMMANDS.has(command)) script = command
  else if (command !== 'run' && command !== 'run-script') return
  if (script === undefined) return
  if (outside !== undefined) {
    report(line, `\`npm ${command}${script === command ? '' : ` ${script}`}\` runs after ${outside}, outside the project`)
    return
  }
  const folders = workspace !== undefined
    ? [workspaceFolder(root, workspace)]
    : [packageFolder(root, cwd), ...(cwd === root ? [packageFolder(root, docDir)] : [])]
  const known = [...new Set(folders.filter((folder) => folder !== undefined))]
  if (known.some((folder) => Object.hasOwn(readJson(join(folder, 'package.json'))?.scripts ?? {}, script))) return
  const where = known.map((folder) => relative(root, join(folder, 'package.json')).split(sep).join('/')).join(' or ')
  report(line, `\`npm ${command}${script === command ? '' : ` ${script}`}\`: no script "${script}" in ${where || `a package named ${workspace}`}`)
}

function checkNpx ({ root, rootPackage, report }, line, args, outside) {
  const name = args.find((arg) => !arg.startsWith('-'))
  if (name === undefined || name === (rootPackage.name ?? 'petstore')) return // reported wherever it appears
  if (outside !== undefined) {
    report(line, `\`npx ${name}\` runs after ${outside}, outside the project: npx would fetch ${name} from the registry`)
  } else if (existsSync(join(root, 'node_modules')) && !existsSync(join(root, 'node_modules', '.bin', name))) {
    report(line, `\`npx ${name}\`: no ${name} in node_modules/.bin, so npx would fetch it from the registry`)
  }
}

/** `text`: a code span of two words, `petstore WORD`, may be text (the log line `petstore started`) rather than a command. */
function checkPetstore ({ cli, report }, line, args, text) {
  const [sub, subsub] = args.filter((arg) => !arg.startsWith('-'))
  if (sub === undefined || !/^[a-z][\w-]*$/.test(sub)) return
  if (text && cli.commands?.has(sub) !== true) return
  if (cli.commands === undefined) {
    report(line, `\`petstore ${sub}\` cannot be checked: ${cli.error}`)
    return
  }
  const subcommands = cli.commands.get(sub)
  if (subcommands === undefined) {
    report(line, `\`petstore ${sub}\`: no such command (the commands: ${[...cli.commands.keys()].join(', ')})`)
  } else if (subcommands.size > 0 && subsub !== undefined && /^[a-z][\w-]*$/.test(subsub) && !subcommands.has(subsub)) {
    report(line, `\`petstore ${sub} ${subsub}\`: no such command (${sub}'s: ${[...subcommands].join(', ')})`)
  }
}

/** The CLI's commands, from the compiled program: name → subcommand names (aliases too). */
async function loadCommands (root) {
  const file = join(root, 'dist', 'src', 'cli', 'program.js')
  if (!existsSync(file)) return { error: 'no dist/src/cli/program.js: run `npm run build` first' }
  try {
    const { buildProgram } = await import(pathToFileURL(file).href)
    const program = buildProgram('0.0.0', { onServe () {} })
    const names = (command) => [command.name(), ...command.aliases()]
    return {
      commands: new Map(program.commands.flatMap((command) => {
        const subs = new Set(command.commands.flatMap(names))
        return names(command).map((name) => [name, subs])
      }))
    }
  } catch (error) {
    return { error: `dist/src/cli/program.js does not load: ${error.message}` }
  }
}

function packageFolder (root, folder) {
  for (let at = folder; at.startsWith(root); at = dirname(at)) {
    if (existsSync(join(at, 'package.json'))) return at
    if (at === root) break
  }
  return undefined
}

function workspaceFolder (root, name) {
  const rootPackage = readJson(join(root, 'package.json')) ?? {}
  for (const folder of rootPackage.workspaces ?? []) {
    if (folder === name || readJson(join(root, folder, 'package.json'))?.name === name) return join(root, folder)
  }
  return undefined
}

/** The project's markdown files, outside node_modules, .git and gitignored folders. */
function markdownFiles (root, ignored) {
  const found = []
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.name === '.git' || entry.name === 'node_modules' || ignored.has(entry.name)) continue
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile() && entry.name.endsWith('.md')) found.push(path)
    }
  }
  walk(root)
  return found.sort()
}

/** The plain names in .gitignore (build outputs, data): folders that are not the repository's. */
function ignoredNames (root) {
  const file = join(root, '.gitignore')
  const names = new Set(['dist'])
  if (!existsSync(file)) return names
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const name = raw.trim().replace(/^\/|\/$/g, '')
    if (name !== '' && !name.startsWith('#') && !/[*?![\]/]/.test(name)) names.add(name)
  }
  return names
}

function readJson (file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
}

function escape (text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
  const problems = await checkDocs(root)
  for (const problem of problems) console.error(problem)
  if (problems.length > 0) {
    console.error(`${problems.length} problem${problems.length === 1 ? '' : 's'} in the docs`)
    process.exit(1)
  }
}
