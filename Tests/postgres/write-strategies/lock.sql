-- One contended write under the write lock every ShareFlow write takes (Store/Postgres).
\set z random(1, 200)
\set a random(1, 1000000000)
BEGIN;
SELECT pg_advisory_xact_lock(6008214460498742391);
SELECT count(*) FROM participant WHERE shareID = :z;
UPDATE zone SET changeSeq = changeSeq + 1 WHERE id = :z RETURNING changeSeq;
INSERT INTO participant (shareID, accountID, seq) VALUES (:z, :a, (SELECT changeSeq FROM zone WHERE id = :z));
COMMIT;
