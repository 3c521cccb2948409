#!/bin/sh
# Memory bounded by one partition (issue 18): `run --partitions N --sequential`
# reconciles the partitions one after another in one process, each reading
# the whole statement but keeping only its keys, so its peak memory is about
# 1/N of a single pass's (a grace-hash split), with the same results. Peak
# RSS from /usr/bin/time (it works under the sanitizers, where `ulimit -v`
# cannot: ASan reserves terabytes of address space); bench/README.md shows a
# 10M-row day failing under `ulimit -v` in one pass and passing split.
# Each pass also has costs that do not shrink with its share of the keys
# (the reading and hashing queues of the whole files, SQLite's cache): the
# rows must outweigh them. At 400,000 rows, once a key took 40 bytes instead
# of 56, one pass needed 47 MB for its rows and a partition 22: a margin of
# 3 MB, lost on a busy machine. At 800,000 rows: 82 and 32 MB.
#   RECON_MEM_ROWS (default 800000)
. "$(dirname "$0")/lib.sh"
ROWS=${RECON_MEM_ROWS:-800000}
export RECON_NOW=2024-03-02T06:00:00Z
# under AddressSanitizer, freed memory waits in a quarantine (256 MB) instead of
# being reused: the next partition would not reuse the last one's memory
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}quarantine_size_mb=0"

if [ ! -x /usr/bin/time ]; then
	if [ "${CI:-}" = true ]; then
		not_ok "/usr/bin/time is not installed (apt-get install time)"
		finish
		exit 1
	fi
	echo "skip - /usr/bin/time is not installed"
	exit 0
fi
cc -O2 -o "$WORK/gen" "$SRC/bench/gen.c"
"$WORK/gen" "$ROWS" "$WORK/data" 1 > /dev/null
"$WORK/gen" 1000 "$WORK/tiny" 1 > /dev/null # what a run costs besides its rows
for d in one split base; do
	data=$WORK/data
	[ $d = base ] && data=$WORK/tiny
	mkdir -p "$WORK/$d"
	ln -s "$data/statements" "$WORK/$d/statements"
	ln -s "$data/local.csv" "$WORK/$d/local.csv"
	cp "$SRC/bench/job.json" "$WORK/$d/job.json"
done

# peak RSS in KiB of a run, its --json lines in $WORK/DIR.json
peak() {
	dir=$1
	shift
	/usr/bin/time -f '%M' -o "$WORK/$dir.rss" "$RECON" run --job "$WORK/$dir/job.json" \
		--date 2024-03-01 --json --quiet "$@" > "$WORK/$dir.json" 2> "$WORK/$dir.err"
}
check "a run over 1000 rows (what a run costs besides its rows)" peak base
check "one pass over $ROWS rows" peak one
check "--partitions 4 --sequential over the same rows" peak split --partitions 4 --sequential
base=$(cat "$WORK/base.rss")
one=$(($(cat "$WORK/one.rss") - base))
split=$(($(cat "$WORK/split.rss") - base))
echo "# peak RSS beyond a 1000-row run (${base} KiB): one pass ${one} KiB, 4 partitions in sequence ${split} KiB"
check "4 partitions in sequence need at most half of one pass's memory for rows (${split} vs ${one} KiB)" \
	test $((split * 2)) -le $one
check "4 windows were run, one per partition" test "$(grep -c . "$WORK/split.json")" = 4
sums() {
	jq -s -c '{upstream: (map(.rows.upstream) | add), local: (map(.rows.local) | add),
		d: (map(.differences | to_entries) | flatten | group_by(.key)
			| map({(.[0].key): (map(.value) | add)}) | add)}' "$1"
}
check "their rows and differences add up to the single pass's" \
	test "$(sums "$WORK/one.json")" = "$(sums "$WORK/split.json")"
i=0
: > "$WORK/split.diff"
while [ $i -lt 4 ]; do
	"$RECON" diff --job "$WORK/split/job.json" --partition $i/4 --format jsonl >> "$WORK/split.diff"
	i=$((i + 1))
done
"$RECON" diff --job "$WORK/one/job.json" --format jsonl | sed "s#$WORK/one/##g" | sort > "$WORK/one.sorted"
sed "s#$WORK/split/##g" "$WORK/split.diff" | sort > "$WORK/split.sorted"
check "the union of the partitions' differences equals the single pass's ($(grep -c . "$WORK/one.sorted") lines)" \
	cmp -s "$WORK/one.sorted" "$WORK/split.sorted"
expect_exit 64 "--sequential alone, on an unpartitioned job" \
	"$RECON" run --job "$WORK/one/job.json" --sequential
finish
