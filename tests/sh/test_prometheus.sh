#!/bin/sh
# Monitoring end to end, as a host runs it: node_exporter (Debian's
# prometheus-node-exporter) reads the heartbeat folder through its textfile
# collector, a real Prometheus scrapes it every second with the shipped rules,
# evaluated every second, all on 127.0.0.1. A hot catch-up over two
# invocations finds an amount mismatch in one window (later windows find
# none); Prometheus' HTTP API must then show ReconAmountMismatch firing with
# recon_job in its labels (not exported_job), and no longer once a t1 run
# finds the key matched. Every wait is bounded (60 s).
. "$(dirname "$0")/lib.sh"

NE=$(command -v prometheus-node-exporter || true)
PROM=$(command -v prometheus || true)
if [ -z "$NE" ] || [ -z "$PROM" ] || ! command -v curl > /dev/null 2>&1; then
	if [ "${CI:-}" = true ]; then
		not_ok "prometheus, prometheus-node-exporter or curl is missing (scripts/install-deps.sh --test)"
		finish
	fi
	echo "skip - prometheus, prometheus-node-exporter or curl not installed"
	exit 77
fi

# a TCP port on 127.0.0.1 nobody listens on (the database servers of the
# other tests take ports in the same range: ss, not a connect, decides)
free_port() {
	for _ in $(seq 1 100); do
		p=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 + 30000))
		if [ -z "$(ss -Htln "sport = :$p" 2> /dev/null)" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

setup_example
E=$WORK/ex
TF=$WORK/textfile
mkdir -p "$TF" "$WORK/tsdb"
sed -e 's/"hot": { "size": "5m", "lag": "2m" }/"hot": { "size": "5m", "lag": "2m", "start": "2024-01-16 09:00:00" }/' \
	-e "s#\"heartbeat\": \"state/recon.prom\"#\"heartbeat\": \"$TF/recon.prom\"#" "$JOB" > "$E/hot.json"

pids=""
cleanup() {
	for p in $pids; do kill "$p" 2> /dev/null || true; done
	for p in $pids; do wait "$p" 2> /dev/null || true; done
}
trap cleanup EXIT INT TERM
# start_on NAME URL-PATH LAUNCHER: runs the shell function LAUNCHER (which
# listens on 127.0.0.1:$PORT) on a free port until it answers there; a port
# taken in the meantime (the other tests' servers) means another try
start_on() {
	name=$1
	path=$2
	launcher=$3
	for _ in 1 2 3 4 5; do
		PORT=$(free_port)
		"$launcher" > "$WORK/$name.log" 2>&1 &
		pid=$!
		for _ in $(seq 1 40); do
			# answered, and by this process (not another one's server on the port)
			if curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$PORT$path" &&
				sleep 0.2 && kill -0 "$pid" 2> /dev/null; then
				pids="$pids $pid"
				ok "$name is up on 127.0.0.1:$PORT"
				return 0
			fi
			kill -0 "$pid" 2> /dev/null || break
			sleep 0.25
		done
		kill "$pid" 2> /dev/null || true
		wait "$pid" 2> /dev/null || true
	done
	not_ok "$name did not start"
	return 1
}
run_ne() {
	exec "$NE" --web.listen-address="127.0.0.1:$PORT" --collector.disable-defaults \
		--collector.textfile --collector.textfile.directory="$TF"
}
run_prom() {
	exec "$PROM" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
		--web.listen-address="127.0.0.1:$PORT"
}

start_on node_exporter /metrics run_ne || finish
NP=$PORT
cat > "$WORK/prometheus.yml" << YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $SRC/rules/prometheus/recon.rules.yml
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$NP']
YML
start_on prometheus /-/ready run_prom || finish
PP=$PORT

# alerts NAME: the firing ALERTS series of that alert, as Prometheus' API returns them
alerts() {
	curl -sG --max-time 5 "http://127.0.0.1:$PP/api/v1/query" \
		--data-urlencode "query=ALERTS{alertname=\"$1\",alertstate=\"firing\"}"
}
# wait_for DESCRIPTION COMMAND...: retries for up to 60 s
wait_for() {
	desc=$1
	shift
	for _ in $(seq 1 120); do
		if "$@" > /dev/null 2>&1; then
			ok "$desc"
			return 0
		fi
		sleep 0.5
	done
	not_ok "$desc (60 s)"
}
firing() { alerts "$1" | grep -q '"recon_job":"example_payments"'; }
# scraped QUERY: Prometheus has a sample for the instant query
scraped() {
	curl -sG --max-time 5 "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" |
		grep -q '"recon_job":"example_payments"'
}
not_firing() { alerts "$1" | grep -q '"result":\[\]'; }


# a hot catch-up: 12 windows, then the rest; ORD-1005's window (10:02 Shanghai)
# has the amount mismatch, the windows after it have none
RECON_NOW=2024-01-16T02:00:00Z expect_exit 0 "hot catch-up, first invocation" \
	"$RECON" run --job "$E/hot.json" --mode hot --quiet
# as with ticks 5 minutes apart, Prometheus sees the counter at 0 before it grows
wait_for "the counter is scraped at 0" \
	scraped 'recon_differences_found_total{class="amount_mismatch",mode="hot"} == 0'
RECON_NOW=2024-01-16T04:05:00Z expect_exit 0 "hot catch-up, second invocation" \
	"$RECON" run --job "$E/hot.json" --mode hot --quiet
RECON_NOW=2024-01-16T04:05:00Z expect_exit 0 "hot catch-up, last invocation" \
	"$RECON" run --job "$E/hot.json" --mode hot --quiet
check "heartbeat: one amount mismatch open" grep -q \
	'^recon_open_items{recon_job="example_payments",mode="hot",class="amount_mismatch",severity="critical"} 1$' "$TF/recon.prom"

wait_for "ReconAmountMismatch fires with recon_job" firing ReconAmountMismatch
alerts ReconAmountMismatch > "$WORK/alerts.json"
check "the alert carries the scrape's job label, not exported_job" \
	sh -c "grep -q '\"job\":\"node\"' '$WORK/alerts.json' && ! grep -q exported_job '$WORK/alerts.json'"
check "the alert carries mode and severity" \
	sh -c "grep -q '\"mode\":\"hot\"' '$WORK/alerts.json' && grep -q '\"severity\":\"critical\"' '$WORK/alerts.json'"
wait_for "ReconAmountMismatchFound fires on the counter's increase" firing ReconAmountMismatchFound

# the merchant corrects the amount; the t1 run of the day finds the key matched
sqlite3 "$E/flow.db" "UPDATE payment_flow SET amount_cents = 8800 WHERE out_trade_no = 'ORD-1005'"
RECON_NOW=2024-01-19T03:00:00Z expect_exit 0 "t1 run of the day" \
	"$RECON" run --job "$E/hot.json" --mode t1 --date 2024-01-16 --quiet
check "heartbeat: no amount mismatch open" grep -q \
	'^recon_open_items{recon_job="example_payments",mode="hot",class="amount_mismatch",severity="critical"} 0$' "$TF/recon.prom"
wait_for "ReconAmountMismatch clears once the item is resolved" not_firing ReconAmountMismatch
if [ "$FAILS" != 0 ]; then
	for l in prometheus node_exporter; do
		echo "--- $l.log"
		tail -n 20 "$WORK/$l.log" 2> /dev/null || true
	done
fi
finish
