// The dependency audit that .ci/run runs after `npm test` (scripts/audit.js),
// fed saved `npm audit --json` reports: the test asks no registry, and
// shows that the audit fails on a high advisory, passes on a clean report,
// and never mistakes an advisory endpoint that did not answer for a clean one.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT, makeTempDir, removeTempDir } from '../support/process.js'

function metadata (counts: Partial<Record<'low' | 'moderate' | 'high' | 'critical', number>>): Record<string, unknown> {
  const all = { info: 0, low: 0, moderate: 0, high: 0, critical: 0, ...counts }
  return { vulnerabilities: { ...all, total: all.low + all.moderate + all.high + all.critical }, dependencies: { prod: 162, dev: 0, optional: 3, peer: 0, peerOptional: 0, total: 164 } }
}

const REPORTS = {
  // An advisory in a dependency of a dependency, reported through the package that brings it in.
  high: {
    auditReportVersion: 2,
    vulnerabilities: {
      'tar-fs': {
        name: 'tar-fs',
        severity: 'high',
        via: [{ source: 1101234, name: 'tar-fs', title: 'tar-fs can extract outside the specified dir', url: 'https://github.com/advisories/GHSA-8cj5-5rvv-wf4v', severity: 'high', range: '>=2.0.0 <2.1.3' }],
        fixAvailable: true
      },
      'prebuild-install': { name: 'prebuild-install', severity: 'high', via: ['tar-fs'], fixAvailable: true }
    },
    metadata: metadata({ high: 2 })
  },
  moderate: {
    auditReportVersion: 2,
    vulnerabilities: {
      debug: { name: 'debug', severity: 'moderate', via: [{ source: 1, name: 'debug', title: 'slow pattern', url: 'https://github.com/advisories/GHSA-moderate', severity: 'moderate', range: '<4' }], fixAvailable: true }
    },
    metadata: metadata({ moderate: 1 })
  },
  clean: { auditReportVersion: 2, vulnerabilities: {}, metadata: metadata({}) },
  // What npm prints when the registry refuses the bulk advisory request.
  unreachable: { message: '405 Method Not Allowed - POST …/-/npm/v1/security/advisories/bulk', statusCode: 405, error: { summary: '', detail: '' } }
}

describe('the dependency audit', () => {
  let dir: string | undefined
  before(() => {
    dir = makeTempDir()
    for (const [name, report] of Object.entries(REPORTS)) writeFileSync(join(dir, `${name}.json`), JSON.stringify(report))
  })
  after(() => { removeTempDir(dir) })

  function audit (report: keyof typeof REPORTS, ...flags: string[]): { code: number | null, output: string } {
    const result = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts', 'audit.js'), ...flags, '--report', join(dir ?? '', `${report}.json`)], { encoding: 'utf8', timeout: 30_000 })
    return { code: result.status, output: result.stdout + result.stderr }
  }

  it('When a production dependency has a high advisory, then the audit fails and names it', () => {
    const { code, output } = audit('high')

    assert.equal(code, 1, output)
    assert.match(output, /high: tar-fs >=2\.0\.0 <2\.1\.3: tar-fs can extract outside the specified dir \(https:\/\/github\.com\/advisories\/GHSA-8cj5-5rvv-wf4v\)/)
  })

  it('When the advisories are moderate at most, then the audit passes and counts them', () => {
    const { code, output } = audit('moderate')

    assert.equal(code, 0, output)
    assert.match(output, /no high or critical advisory \(0 critical, 0 high, 1 moderate, 0 low\)/)
  })

  it('When nothing is found, then the audit passes', () => {
    assert.equal(audit('clean').code, 0)
  })

  it('When the advisory endpoint does not answer, then the audit says the dependencies were not audited, and fails with --strict', () => {
    const relaxed = audit('unreachable')
    const strict = audit('unreachable', '--strict')

    assert.equal(relaxed.code, 0, relaxed.output)
    assert.match(relaxed.output, /NOT AUDITED: .*405 Method Not Allowed/)
    assert.equal(strict.code, 1, strict.output)
  })
})
