// Every regular expression in src/ is checked for ReDoS by recheck
// (https://makenowjust-labs.github.io/recheck/): each literal, each
// `RegExp(…)` and each string that `match`, `matchAll` or `search` turn into
// one, found by walking the TypeScript syntax tree, not by grepping. Only
// `safe` passes: `vulnerable` fails with the attack string recheck built,
// and `unknown` (a timeout, or a pattern recheck does not support) fails
// too, since it proves nothing. A pattern built at run time cannot be
// checked here, so it fails as well: write it as a literal.
//
// recheck's pure-JavaScript backend is used: the same on every Node.js
// version and platform, with no Java and no native binary.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { check, type Diagnostics } from 'recheck'
import { PROJECT_ROOT } from '../support/process.js'

// Read by recheck on every call; `auto` would start recheck's native or Java agent where one is installed.
process.env.RECHECK_BACKEND = 'pure'

/** A check's budget: far above what any pattern here takes (3 s at most on a busy 2-core machine). */
const CHECK_TIMEOUT_MS = 60_000

interface Found {
  where: string
  source: string
  flags: string
}

interface Dynamic {
  where: string
  text: string
}

/** The text of a string literal, or undefined for an expression whose value is known only at run time. */
function literalText (node: ts.Expression | undefined): string | undefined {
  if (node === undefined) return ''
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text
  return undefined
}

const STRING_TO_REGEXP = new Map([['match', ''], ['matchAll', 'g'], ['search', '']])

function collect (root: string): { found: Found[], dynamic: Dynamic[] } {
  const dir = join(root, 'src')
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts')).sort()
  const found: Found[] = []
  const dynamic: Dynamic[] = []
  for (const file of files) {
    const path = join(dir, file)
    const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
    const where = (node: ts.Node): string => `${relative(root, path)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`
    const visit = (node: ts.Node): void => {
      if (ts.isRegularExpressionLiteral(node)) {
        const end = node.text.lastIndexOf('/')
        found.push({ where: where(node), source: node.text.slice(1, end), flags: node.text.slice(end + 1) })
      } else if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && ts.isIdentifier(node.expression) && node.expression.text === 'RegExp') {
        const [pattern, flags] = node.arguments ?? []
        // new RegExp(/literal/): the literal itself is visited below.
        if (pattern !== undefined && !ts.isRegularExpressionLiteral(pattern)) {
          const sourceText = literalText(pattern)
          const flagsText = literalText(flags)
          if (sourceText === undefined || flagsText === undefined) dynamic.push({ where: where(node), text: node.getText(source) })
          else found.push({ where: where(node), source: sourceText, flags: flagsText })
        }
      } else if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && STRING_TO_REGEXP.has(node.expression.name.text)) {
        const [argument] = node.arguments
        if (argument !== undefined && (ts.isStringLiteral(argument) || ts.isNoSubstitutionTemplateLiteral(argument))) {
          found.push({ where: where(node), source: argument.text, flags: STRING_TO_REGEXP.get(node.expression.name.text) ?? '' })
        }
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return { found, dynamic }
}

function explain (diagnostics: Diagnostics): string {
  switch (diagnostics.status) {
    case 'safe': return `safe: ${diagnostics.complexity.summary}, by the ${diagnostics.checker} checker`
    case 'vulnerable': return `vulnerable: ${diagnostics.complexity.summary}; attack string: ${diagnostics.attack.pattern}`
    case 'unknown': return `unknown: ${diagnostics.error.kind}${'message' in diagnostics.error ? ` (${diagnostics.error.message})` : ''}`
  }
}

const { found, dynamic } = collect(PROJECT_ROOT)

describe('regular expressions in src/ are safe from ReDoS (recheck)', { timeout: 10 * 60_000 }, () => {
  it('When src/ is walked, then its patterns are found, the known ones among them', () => {
    // A collector that finds nothing would let every pattern through.
    assert.ok(found.length >= 20, `only ${found.length} patterns found`)
    assert.ok(found.some((f) => f.where.startsWith('src/keys/identify.ts') && f.source.startsWith('^Bearer')), 'the Bearer pattern of src/keys/identify.ts was not found')
    assert.ok(found.some((f) => f.where.startsWith('src/keys/tokens.ts')), 'the token pattern of src/keys/tokens.ts was not found')
    // What the request log and the log scan redact and find tokens with (percent-decoding and checksums are loops, not patterns).
    assert.ok(found.some((f) => f.where.startsWith('src/keys/tokens.ts') && f.source === 'pet_(?:live|test)_[0-9a-z]*' && f.flags === 'gi'), 'the prefixed-token pattern of src/keys/tokens.ts was not found')
    // How a JSON number literal is split into digits and exponent, to tell an integer exactly.
    assert.ok(found.some((f) => f.where.startsWith('src/plugins/json.ts') && f.source.startsWith('^(-?)(\\d+)')), 'the number pattern of src/plugins/json.ts was not found')
  })

  it('When a pattern known to be vulnerable is checked, then recheck says so, with an attack string', async () => {
    // The checker itself must be able to fail.
    const diagnostics = await check('^(a+)+$', '', { timeout: CHECK_TIMEOUT_MS })
    assert.equal(diagnostics.status, 'vulnerable', explain(diagnostics))
  })

  it('When src/ is walked, then no pattern is built at run time', () => {
    assert.deepEqual(dynamic.map((d) => `${d.where}: ${d.text}`), [])
  })

  for (const { where, source, flags } of found) {
    it(`When /${source}/${flags} (${where}) is checked, then recheck finds it safe`, async (t) => {
      const diagnostics = await check(source, flags, { timeout: CHECK_TIMEOUT_MS })
      t.diagnostic(explain(diagnostics))
      assert.equal(diagnostics.status, 'safe', `${where}: /${source}/${flags} is ${explain(diagnostics)}`)
    })
  }
})
