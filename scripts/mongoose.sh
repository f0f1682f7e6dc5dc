#!/usr/bin/env bash
# mongoose.sh: Mongoose's own test suite (mocha, through the Node.js driver) against a fresh
# cleave: an independent application suite cleave was never tuned to. Not in CI (it needs
# Mongoose's repository from GitHub and its npm dependencies; about 2 min once installed).
#
# Usage: scripts/mongoose.sh       (make mongoose)
#   env: OUT (/tmp/cleave-mongoose), MONGOOSE_REF (the tag cloned: 9.9.3), MONGOOSE_DIR (an
#        existing checkout of Mongoose to use instead of cloning), CLEAVE (a built cleave to
#        run instead of building one)
# Prints mocha's summary (passing, pending, failing) and the first line of each failure; the
# whole report is in $OUT/mongoose.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/cleave-mongoose}
REF=${MONGOOSE_REF:-9.9.3}
mkdir -p "$OUT"
DIR=${MONGOOSE_DIR:-$OUT/mongoose-$REF}
if [ ! -d "$DIR" ]; then
	git clone --quiet --depth 1 --branch "$REF" https://github.com/Automattic/mongoose "$DIR"
fi
if [ ! -d "$DIR/node_modules" ]; then
	# --ignore-scripts: mongodb-memory-server would download a MongoDB; cleave is the server.
	(cd "$DIR" && npm install --ignore-scripts --no-audit --no-fund --loglevel error)
fi
BIN=${CLEAVE:-$OUT/cleave}
[ -n "${CLEAVE:-}" ] || go build -o "$BIN" ./cmd/cleave
rm -rf "$OUT/data" "$OUT/addr"
"$BIN" --dir "$OUT/data" --listen 127.0.0.1:0 --addr-file "$OUT/addr" --http-addr "" --log-level warn >"$OUT/cleave.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$OUT/addr" ] && break; sleep 0.1; done
[ -s "$OUT/addr" ] || { echo "cleave did not start: $OUT/cleave.log" >&2; exit 1; }
status=0
(cd "$DIR" && MONGOOSE_TEST_URI="mongodb://$(cat "$OUT/addr")/mongoose_test" npx mocha --exit --reporter dot \
	--ignore "test/encryption/**/*.test.js" --ignore "test/types/**" "./test/**/*.test.js") >"$OUT/mongoose.txt" 2>&1 || status=$?
grep -E '^ +[0-9]+ (passing|pending|failing)' "$OUT/mongoose.txt" || true
grep -A2 -E '^  [0-9]+\) ' "$OUT/mongoose.txt" | grep -E 'Error' | sort | uniq -c | sort -rn || true
exit "$status"
