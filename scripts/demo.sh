#!/bin/sh
# The quick start's first command: install what is missing, build, and run a
# real reconciliation on the embedded default (examples/basic: a CSV statement
# against a SQLite payment flow), printing its summary and differences.
set -eu
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

ex=examples/basic
rm -rf "$ex/state" "$ex/flow.db"
cat sql/sqlite/payment_flow.sql sql/sqlite/merchant.sql "$ex/flow.sql" | sqlite3 "$ex/flow.db"

echo "\$ build/recon run --job $ex/job.json --date 2024-01-16"
build/recon run --job "$ex/job.json" --date 2024-01-16
echo
echo "\$ build/recon diff --job $ex/job.json"
build/recon diff --job "$ex/job.json"
