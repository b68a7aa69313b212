#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the tests (SPEC §16, M4), on a free loopback port with its
# socket in its own folder, fsync off: made in about 1.5 s, gone without a trace.
#
#   Tests/postgres/cluster.sh start DIR   installs PostgreSQL from Debian's packages when missing,
#                                         starts a cluster in DIR, prints its URL
#                                         (postgres://postgres@127.0.0.1:PORT/shareflow_test)
#   Tests/postgres/cluster.sh stop DIR    stops it and removes DIR (quiet when there is none)
#   Tests/postgres/cluster.sh pause DIR   stops its server, keeping its data (an outage)
#   Tests/postgres/cluster.sh resume DIR  starts its server again on the same port
#
# initdb refuses to run as root: as root the cluster belongs to the `postgres` user the package
# makes, in a folder that user can reach.
set -euo pipefail
command=${1:?usage: cluster.sh start|stop DIR}
dir=${2:?usage: cluster.sh start|stop DIR}

bindir() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$found" ] && [ -x "$found/initdb" ] && echo "$found"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Starts the cluster's server on `port` (the cluster made already). The server outlives this
# script: it gets none of the descriptors this script was given beyond the standard three (a
# parent that waits for a descriptor it passed to close, as Foundation's Process does, would
# wait for the server).
serve() {
  local fd
  for fd in $(ls /proc/$$/fd); do
    [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null
  done
  as_owner "$1/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 -o "-c listen_addresses=127.0.0.1 -p $2 -k $dir \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" start >/dev/null \
    || { echo "cluster.sh: the server did not start:" >&2; cat "$dir/server.log" >&2; exit 1; }
}

case "$command" in
pause)
  as_owner "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null
  ;;
resume)
  serve "$(bindir)" "$(cat "$dir/port")"
  ;;
start)
  bin=$(bindir || true)
  if [ -z "$bin" ]; then
    echo "cluster.sh: installing postgresql with apt-get" >&2
    sudo=$([ "$(id -u)" = 0 ] || echo sudo)
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    bin=$(bindir) || { echo "cluster.sh: postgresql installed, but no initdb under /usr/lib/postgresql/*/bin" >&2; exit 1; }
  fi
  mkdir -p "$dir"
  chmod 0755 "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { echo "cluster.sh: initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1; }
  echo "$port" >"$dir/port"
  serve "$bin" "$port"
  as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres shareflow_test
  url="postgres://postgres@127.0.0.1:$port/shareflow_test"
  echo "$url" >"$dir/url"
  echo "$url"
  ;;
stop)
  [ -d "$dir" ] || exit 0
  bin=$(bindir || true)
  if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: cluster.sh start|stop DIR" >&2
  exit 2
  ;;
esac
