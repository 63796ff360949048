-- An entry's payload (every effect of one group commit: tens of KB under load) was stored
-- out of line uncompressed (STORAGE EXTERNAL), cut into ~2 KB TOAST chunks: per chunk a
-- heap tuple and an index entry, each written to the WAL and replayed by every standby.
-- Measured on the three-AZ shape (500 clients, pipeline 1; docs/DURABLE-PATH-PLAN.md):
-- with lz4 and the tuple target below, PostgreSQL's CPU per SET fell 7-21 % on values of
-- random digits (stored at ~62 % of their size) and ~26 % on redis-benchmark's repetitive
-- ones. Bytes lz4 cannot shrink are stored as before, after a failed attempt.
--
-- A server built without lz4 keeps the payload uncompressed: pglz costs more than it saves.
DO $$
BEGIN
    ALTER TABLE entries ALTER COLUMN payload SET COMPRESSION lz4;
    ALTER TABLE entries ALTER COLUMN payload SET STORAGE EXTENDED;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'PostgreSQL without lz4: log payloads stay uncompressed';
END
$$;

-- Rows up to a whole page stay in the heap (one tuple, one WAL record) instead of going
-- to TOAST from ~2 KB. Only the catalog changes: existing rows are not rewritten.
ALTER TABLE entries SET (toast_tuple_target = 8160);
