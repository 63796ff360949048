-- Entries move to a rowid table with the payload last.
--
-- In a WITHOUT ROWID table a row lives in the key's B-tree: a seek that compares against a
-- row whose payload overflowed reads the whole row, overflow pages and all (an append of
-- ~1 MB of effects read most of it back from the WAL). Here the (log, id) key is a UNIQUE
-- index of small cells, the rows sit in rowid order (appends go to the end), and with the
-- payload as the last column, reading checksum, kind or ts_ms never walks its overflow
-- chain.

CREATE TABLE entries_rowid (
    log      TEXT    NOT NULL REFERENCES logs (name),
    id       INTEGER NOT NULL CHECK (id >= 1),
    prev_id  INTEGER NOT NULL,
    epoch    INTEGER NOT NULL,
    kind     INTEGER NOT NULL,
    format   INTEGER NOT NULL,
    checksum BLOB    NOT NULL CHECK (length(checksum) = 32),
    ts_ms    INTEGER NOT NULL,
    payload  BLOB    NOT NULL,
    -- The arbiter of the conditional append: one row per (log, id), ids dense by CHECK.
    PRIMARY KEY (log, id),
    CHECK (id = prev_id + 1)
);

INSERT INTO entries_rowid (log, id, prev_id, epoch, kind, format, checksum, ts_ms, payload)
    SELECT log, id, prev_id, epoch, kind, format, checksum, ts_ms, payload FROM entries ORDER BY log, id;

DROP INDEX entries_leadership;
DROP TABLE entries;
ALTER TABLE entries_rowid RENAME TO entries;

-- Leadership lookups (list view) scan only lease renewals and leader claims.
CREATE INDEX entries_leadership ON entries (log, id) WHERE kind IN (2, 3);
