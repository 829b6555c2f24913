// A line in the log when a key is banned, and another when that ban ends
// (docs/OPERATING.md: Logs), written by the instance whose refusal earned the ban, so
// that instances sharing Redis log each ban once. The end is written by a
// timer, since no request need arrive when it ends; an instance that stops
// before then leaves the end unlogged (the first line says when it ends).

/** What this logs with: pino's logger is one. */
interface BanLogger {
  warn: (fields: object, message: string) => void
  info: (fields: object, message: string) => void
}

export interface BanLog {
  /** A key has just earned a ban that lasts until `until` (Unix ms). */
  started: (keyId: number, until: number) => void
  /** Cancels the pending end-of-ban lines: the instance is stopping. */
  close: () => void
}

export function createBanLog (logger: BanLogger, now: () => number): BanLog {
  const pending = new Set<NodeJS.Timeout>()
  return {
    started (keyId, until) {
      const endsAt = new Date(until).toISOString()
      logger.warn({ keyId, bannedUntil: endsAt }, `API key ${keyId} banned until ${endsAt}: it kept sending after being refused`)
      const timer = setTimeout(() => {
        pending.delete(timer)
        logger.info({ keyId }, `API key ${keyId}: ban ended`)
      }, Math.max(0, until - now()))
      // The line is not worth keeping the process alive for.
      timer.unref()
      pending.add(timer)
    },
    close () {
      for (const timer of pending) clearTimeout(timer)
      pending.clear()
    }
  }
}
