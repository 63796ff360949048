-- Memoria log service schema (SQLite). WAL and synchronous=FULL are set per connection by
-- the service, not here (they are connection settings, not schema).

CREATE TABLE logs (
    name        TEXT    PRIMARY KEY NOT NULL,
    -- Highest id covered by a published, verified snapshot: truncation stops below it.
    snapshot_id INTEGER NOT NULL DEFAULT 0 CHECK (snapshot_id >= 0),
    created_ms  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE entries (
    log      TEXT    NOT NULL REFERENCES logs (name),
    id       INTEGER NOT NULL CHECK (id >= 1),
    prev_id  INTEGER NOT NULL,
    epoch    INTEGER NOT NULL,
    kind     INTEGER NOT NULL,
    format   INTEGER NOT NULL,
    payload  BLOB    NOT NULL,
    checksum BLOB    NOT NULL CHECK (length(checksum) = 32),
    ts_ms    INTEGER NOT NULL,
    -- The arbiter of the conditional append: one row per (log, id), ids dense by CHECK.
    PRIMARY KEY (log, id),
    CHECK (id = prev_id + 1)
) WITHOUT ROWID;

-- Leadership lookups (list view) scan only lease renewals and leader claims.
CREATE INDEX entries_leadership ON entries (log, id) WHERE kind IN (2, 3);
