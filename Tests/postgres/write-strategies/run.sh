#!/usr/bin/env bash
# The write lock against serializable transactions retried on failure (SPEC §16 M2), measured
# with pgbench on the pattern every contended ShareFlow write has: a count checked (R8's 100),
# a zone's counter row moved (§14's positions), a row inserted at that position. 200 zones, so
# most transactions touch different rows: the case where serializable could run in parallel.
# Usage: Tests/postgres/write-strategies/run.sh postgres://USER@HOST:PORT (a scratch database
# `write_strategies` is made and dropped).
set -euo pipefail
server="${1:?usage: run.sh postgres://USER@HOST:PORT}"
here="$(cd "$(dirname "$0")" && pwd)"
db="$server/write_strategies"
psql "$server/postgres" -qc "DROP DATABASE IF EXISTS write_strategies" -c "CREATE DATABASE write_strategies"
trap 'psql "$server/postgres" -qc "DROP DATABASE IF EXISTS write_strategies WITH (FORCE)"' EXIT
psql "$db" -q <<'SQL'
CREATE TABLE zone (id BIGINT PRIMARY KEY, changeSeq BIGINT NOT NULL DEFAULT 0);
CREATE TABLE participant (id BIGSERIAL PRIMARY KEY, shareID BIGINT NOT NULL, accountID BIGINT NOT NULL, seq BIGINT NOT NULL);
CREATE INDEX ON participant(shareID);
INSERT INTO zone SELECT g FROM generate_series(1, 200) g;
SQL
for clients in 3 16; do
  for mode in lock serializable; do
    printf '%-13s %2d clients: ' "$mode" "$clients"
    pgbench -n -c "$clients" -j 2 -T 8 --max-tries=100 -f "$here/$mode.sql" "$db" 2>&1 \
      | grep -E '^tps|retried|failed transactions' | sed 's/ (without initial connection time)//' | tr '\n' ' '
    echo
  done
done
