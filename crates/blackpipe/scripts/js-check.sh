#!/usr/bin/env bash
# blackpipe for a JavaScript team: the official Node.js driver (npm package `mongodb`) and
# mongosh (npm package `mongosh`) run their everyday surface against a blackpipe replica set
# (js-check/driver.js, js-check/shell.js): CRUD, indexes, aggregation, explain, bulk writes,
# transactions, change streams, GridFS, and the shell's stats, status and replication helpers.
# Each check prints `ok` or `FAIL` with the server's answer; the script exits non-zero if any
# failed.
#
# Run from the workspace root. Needs npm and the npm registry. Scratch files go to $WORK
# (default: a fresh temporary folder); PORT (default 28117) is the first member's port.
set -euo pipefail
[ -f crates/blackpipe/Cargo.toml ] || { echo "run from the workspace root" >&2; exit 2; }
WORK=${WORK:-$(mktemp -d)}
PORT=${PORT:-28117}
HERE=crates/blackpipe/scripts/js-check
cargo build --release -q -p blackpipe
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/blackpipe"
(cd "$WORK" && npm init -y >/dev/null && npm install -q mongodb@7 mongosh@2 >/dev/null)
"$BIN" --replset 3 --port "$PORT" >"$WORK/blackpipe.log" 2>&1 &
BP=$!
trap 'kill $BP 2>/dev/null || true' EXIT
export BLACKPIPE_URI="mongodb://127.0.0.1:$PORT/?replicaSet=rs0"
for _ in $(seq 50); do
  (cd "$WORK" && node -e "require('mongodb').MongoClient.connect(process.env.BLACKPIPE_URI).then(c => c.close())" 2>/dev/null) && break
  sleep 0.2
done
status=0
echo "== Node.js driver $(cd "$WORK" && node -p 'require("mongodb/package.json").version')"
(cd "$WORK" && NODE_PATH="$WORK/node_modules" node "$OLDPWD/$HERE/driver.js") || status=1
echo "== mongosh $(cd "$WORK" && node -p 'require("mongosh/package.json").version')"
(cd "$WORK" && ./node_modules/.bin/mongosh --quiet "$BLACKPIPE_URI" "$OLDPWD/$HERE/shell.js") || status=1
exit $status
