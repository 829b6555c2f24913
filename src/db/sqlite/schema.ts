// The SQLite schema, as numbered migrations. Each runs once, inside a write
// transaction, so a second instance starting on the same file waits for the
// first and then finds nothing left to do.
import type { Database } from './driver.js'

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE pets (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     name TEXT NOT NULL,
     category_id INTEGER NOT NULL CHECK (category_id >= 1),
     status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold'))
   );
   CREATE INDEX pets_status_id ON pets (status, id);
   CREATE TABLE api_keys (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     name TEXT NOT NULL,
     plan TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
     per_minute INTEGER CHECK (per_minute >= 1),
     per_day INTEGER CHECK (per_day >= 1),
     environment TEXT NOT NULL CHECK (environment IN ('production', 'staging')),
     token_hash TEXT NOT NULL UNIQUE,
     created_at INTEGER NOT NULL,
     revoked_at INTEGER
   );
   CREATE TABLE idempotency_keys (
     api_key_id INTEGER NOT NULL REFERENCES api_keys (id),
     key TEXT NOT NULL,
     request_hash TEXT NOT NULL,
     pet_id INTEGER NOT NULL REFERENCES pets (id),
     created_at INTEGER NOT NULL,
     PRIMARY KEY (api_key_id, key)
   );
   CREATE TABLE secrets (
     name TEXT PRIMARY KEY,
     value BLOB NOT NULL
   );`,
  // The life of a key (docs/KEYS.md). Keys made before it keep working
  // with both scopes and no expiry; their token is gone, so their hint is
  // the prefix alone. The previous token's columns wait for rolling.
  `ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'pets:read pets:write';
   ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
   ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;
   ALTER TABLE api_keys ADD COLUMN token_hint TEXT NOT NULL DEFAULT '';
   ALTER TABLE api_keys ADD COLUMN previous_token_hash TEXT;
   ALTER TABLE api_keys ADD COLUMN previous_token_expires_at INTEGER;
   UPDATE api_keys SET token_hint = CASE environment WHEN 'production' THEN 'pet_live_…' ELSE 'pet_test_…' END;
   CREATE UNIQUE INDEX api_keys_previous_token_hash ON api_keys (previous_token_hash);`,
  // Every token ever issued, in the order issued: what each instance's
  // index of token hashes reads (keys/lookup/token-index.ts). A key's id no longer
  // tells a new token from an old one once tokens can be rolled.
  `CREATE TABLE api_key_tokens (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     api_key_id INTEGER NOT NULL REFERENCES api_keys (id),
     token_hash TEXT NOT NULL UNIQUE
   );
   INSERT INTO api_key_tokens (api_key_id, token_hash) SELECT id, token_hash FROM api_keys ORDER BY id;
   INSERT INTO api_key_tokens (api_key_id, token_hash)
     SELECT id, previous_token_hash FROM api_keys WHERE previous_token_hash IS NOT NULL ORDER BY id;`,
  // Requests per key and UTC day (docs/OPERATING.md: Usage), added to by every
  // instance; `day` counts days from 1970-01-01.
  `CREATE TABLE key_usage (
     api_key_id INTEGER NOT NULL REFERENCES api_keys (id),
     day INTEGER NOT NULL,
     admitted INTEGER NOT NULL DEFAULT 0,
     refused INTEGER NOT NULL DEFAULT 0,
     PRIMARY KEY (api_key_id, day)
   ) WITHOUT ROWID;`,
  // The operator console's views of many keys (docs/KEYS.md: The console): every
  // key's requests on one day. Keys by last use are sorted without an
  // index: one would be rewritten by every write of usage, for a sort of
  // a few milliseconds at 10,000 keys.
  // The counts are in the index: read through a bare index on day, 30
  // days of 10,000 keys took 0.5 to 1.4 s of row lookups.
  'CREATE INDEX key_usage_day ON key_usage (day, admitted, refused);',
  // A key's own cap of requests in flight (docs/API.md: Requests in flight);
  // null, as for every key made before it: the plan's.
  'ALTER TABLE api_keys ADD COLUMN concurrency INTEGER CHECK (concurrency >= 1);',
  // Calls of deprecated operations per key, operation and UTC day (docs/OPERATING.md:
  // The deprecated operation's callers), added to by every instance as key_usage is;
  // `last_call` in Unix milliseconds. Read by day range, for the last 30 days.
  `CREATE TABLE deprecated_calls (
     api_key_id INTEGER NOT NULL REFERENCES api_keys (id),
     operation TEXT NOT NULL,
     day INTEGER NOT NULL,
     calls INTEGER NOT NULL DEFAULT 0,
     last_call INTEGER NOT NULL,
     PRIMARY KEY (api_key_id, operation, day)
   ) WITHOUT ROWID;
   CREATE INDEX deprecated_calls_day ON deprecated_calls (day);`,
  // Events and their webhook deliveries (docs/WEBHOOKS.md). An event is written
  // in its change's own transaction; fanning it out to the endpoints that
  // want it is the dispatcher's, later. The secret is kept as it is: HMAC
  // signing needs it, not a hash of it.
  `CREATE TABLE webhook_endpoints (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     url TEXT NOT NULL,
     events TEXT,
     description TEXT NOT NULL,
     enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
     secret BLOB NOT NULL,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL
   );
   CREATE TABLE events (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     type TEXT NOT NULL,
     created_at INTEGER NOT NULL,
     data TEXT NOT NULL,
     fanned_out INTEGER NOT NULL DEFAULT 0
   );
   CREATE INDEX events_to_fan_out ON events (id) WHERE fanned_out = 0;
   CREATE TABLE webhook_deliveries (
     event_id INTEGER NOT NULL REFERENCES events (id) ON DELETE CASCADE,
     endpoint_id INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
     state TEXT NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed')),
     attempts INTEGER NOT NULL DEFAULT 0,
     next_attempt_at INTEGER NOT NULL,
     last_status INTEGER,
     last_error TEXT,
     PRIMARY KEY (event_id, endpoint_id)
   ) WITHOUT ROWID;
   CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
   CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, event_id);`,
  // Where a key's token was found (docs/KEYS.md: Leaked tokens): once per
  // report, so that a report sent twice adds nothing.
  `CREATE TABLE key_leaks (
     api_key_id INTEGER NOT NULL REFERENCES api_keys (id),
     report TEXT NOT NULL,
     url TEXT,
     source TEXT,
     found_at INTEGER NOT NULL,
     PRIMARY KEY (api_key_id, report)
   ) WITHOUT ROWID;`,
  // What was announced of each key, once (docs/WEBHOOKS.md: Quota and expiry):
  // `at` is the UTC day (days from 1970-01-01) of a quota event, the expiry
  // (Unix milliseconds) of an expiry event. The row is written with its
  // event, so instances that see the same moment announce it once. The
  // index serves the periodic look for keys whose expiry is near.
  `CREATE TABLE key_announcements (
     api_key_id INTEGER NOT NULL REFERENCES api_keys (id),
     type TEXT NOT NULL,
     at INTEGER NOT NULL,
     PRIMARY KEY (api_key_id, type, at)
   ) WITHOUT ROWID;
   CREATE INDEX api_keys_expires_at ON api_keys (expires_at) WHERE expires_at IS NOT NULL;`,
  // A webhook endpoint's secret before its last roll, and until when
  // deliveries are signed with it too (docs/WEBHOOKS.md: Rolling a secret).
  `ALTER TABLE webhook_endpoints ADD COLUMN previous_secret BLOB;
   ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at INTEGER;`,
  // Since when every delivery to an endpoint has failed, and why and when the
  // service disabled it for that (docs/WEBHOOKS.md: Failing endpoints).
  `ALTER TABLE webhook_endpoints ADD COLUMN failing_since INTEGER;
   ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason TEXT;
   ALTER TABLE webhook_endpoints ADD COLUMN disabled_at INTEGER;`
]

/** The schema's version once every migration has run: `PRAGMA user_version`. */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length

export function migrateSqlite (db: Database): void {
  db.transaction(() => {
    const current = Number(db.pragma('user_version', { simple: true }))
    MIGRATIONS.slice(current).forEach((sql) => db.exec(sql))
    db.pragma(`user_version = ${MIGRATIONS.length}`)
  }).immediate()
}
