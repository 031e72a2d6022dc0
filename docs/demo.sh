#!/usr/bin/env bash
# The main job on an example database: write facts, read history and an as-of view,
# print the receipts. Run through `make demo`; $1 is the fgraph executable.
set -euo pipefail
fgraph="${1:-fgraph}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db="$dir/demo.fgraph"
fg="$fgraph"
run() { printf '\n$ fgraph %s\n' "$*"; "$fg" --db "$db" "$@"; }

run init
run declare person/email --type text --unique --doc "Primary e-mail address"
run add '{"id":"ada","person/name":"Ada Lovelace","person/born":1815,"person/email":"ada@example.org"}'
run add '{"id":"grace","person/name":"Grace Hopper"}'
run add '{"id":"ada","person/knows":{"ref":"grace"}}'
run add '{"id":"ada","person/born":1816}'
run get ada
run history ada person/born
txs=$("$fg" --db "$db" --json history ada person/born | python3 -c 'import json,sys; print(*[h["tx"] for h in json.load(sys.stdin)])')
set -- $txs
first_tx=$1 second_tx=$2
run get ada --at "$first_tx"
run why ada person/born
run diff "$first_tx" "$second_tx"
run tx "$second_tx"
run tail --since "$first_tx"
run info
printf '\nThe database was %s; it is removed again now.\n' "$db"
