#!/usr/bin/env bash
# Runs a command beside a throw-away PostgreSQL cluster (SPEC §16, M4), which is stopped and
# removed afterwards whatever happens (the command failing, Ctrl-C, a timeout's TERM):
#
#   Tests/postgres/with-cluster.sh COMMAND [ARG...]
#
# The command sees the cluster's database as SHAREFLOW_TEST_CLUSTER
# (postgres://postgres@127.0.0.1:PORT/shareflow_test) and its folder as
# SHAREFLOW_TEST_CLUSTER_DIR (for `cluster.sh pause|resume`, an outage); the PostgreSQL tests
# use them, and
# `make test` runs the engine's and the Lua suite on it a second time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/shareflow-pg.XXXXXX)
stop() { bash "$here/cluster.sh" stop "$dir"; }
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
started=$(date +%s.%N)
url=$(bash "$here/cluster.sh" start "$dir") || { echo "with-cluster.sh: no PostgreSQL cluster, so no test ran" >&2; exit 1; }
echo "with-cluster.sh: PostgreSQL at $url (up in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$started" "$(date +%s.%N)") s)"
export SHAREFLOW_TEST_CLUSTER="$url" SHAREFLOW_TEST_CLUSTER_DIR="$dir"
"$@"
