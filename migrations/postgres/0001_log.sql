-- Memoria log service schema (PostgreSQL).

CREATE TABLE logs (
    name        TEXT   PRIMARY KEY,
    -- Highest id covered by a published, verified snapshot: truncation stops below it.
    snapshot_id BIGINT NOT NULL DEFAULT 0 CHECK (snapshot_id >= 0),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE entries (
    log      TEXT     NOT NULL REFERENCES logs (name),
    id       BIGINT   NOT NULL CHECK (id >= 1),
    prev_id  BIGINT   NOT NULL,
    epoch    BIGINT   NOT NULL,
    kind     SMALLINT NOT NULL,
    format   INTEGER  NOT NULL,
    payload  BYTEA    NOT NULL,
    checksum BYTEA    NOT NULL CHECK (octet_length(checksum) = 32),
    ts_ms    BIGINT   NOT NULL,
    -- The arbiter of the conditional append: one row per (log, id), ids dense by CHECK.
    PRIMARY KEY (log, id),
    CHECK (id = prev_id + 1)
);

-- Payloads are already compact effects; skip TOAST compression attempts on the hot path.
ALTER TABLE entries ALTER COLUMN payload SET STORAGE EXTERNAL;

-- Leadership lookups (list view) scan only lease renewals and leader claims.
CREATE INDEX entries_leadership ON entries (log, id) WHERE kind IN (2, 3);
