-- The same write as a serializable transaction, retried by pgbench on serialization failure.
\set z random(1, 200)
\set a random(1, 1000000000)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) FROM participant WHERE shareID = :z;
UPDATE zone SET changeSeq = changeSeq + 1 WHERE id = :z RETURNING changeSeq;
INSERT INTO participant (shareID, accountID, seq) VALUES (:z, :a, (SELECT changeSeq FROM zone WHERE id = :z));
COMMIT;
