#!/bin/sh
# deploy/kubernetes without a cluster (issue 18): `kubectl apply --dry-run=client`
# needs the API server's discovery even in client mode, so it cannot run
# offline; instead deploy/kubernetes/check.py checks the structure recon relies
# on (Indexed Job per mode, JOB_COMPLETION_INDEX -> --partition, a store per
# partition, Forbid, resources, DSNs from a Secret), `kubectl kustomize` renders
# the manifests when kubectl is installed, the ConfigMap's job file loads in
# recon, and promtool checks and tests the partition alert rules.
. "$(dirname "$0")/lib.sh"
K=$SRC/deploy/kubernetes

need() {
	if [ "${CI:-}" = true ]; then
		not_ok "$1 is not installed ($2)"
	else
		echo "skip - $1 not installed ($2)"
	fi
}

if python3 -c 'import yaml' 2> /dev/null; then
	check "manifests: structure (deploy/kubernetes/check.py)" python3 "$K/check.py" "$K"
	# the job file of the ConfigMap, as the pods read it
	python3 -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
sys.stdout.write(list(d["data"].values())[0])' "$K/configmap-job.yaml" |
		sed 's#"/var/lib/recon/#"#g' > "$WORK/wechatpay_payments.json"
	RECON_FORMATS_DIR=$SRC/rules/formats expect_exit 64 \
		"the ConfigMap's job file loads, and its store needs --partition I/4" \
		"$RECON" status --job "$WORK/wechatpay_payments.json"
	check "... saying so" grep -q -- "--partition I/4" "$WORK/err"
else
	need "python3-yaml" "apt-get install python3-yaml"
fi
if command -v kubectl > /dev/null 2>&1; then
	check "manifests: kubectl kustomize renders them (offline)" \
		sh -c "kubectl kustomize '$K' > '$WORK/rendered.yaml' && grep -q 'completionMode: Indexed' '$WORK/rendered.yaml'"
else
	echo "skip - kubectl not installed: kustomize rendering not checked"
fi
if command -v promtool > /dev/null 2>&1; then
	check "partition alert rules pass promtool check rules" \
		promtool check rules "$SRC/rules/prometheus/recon.partitions.rules.yml"
	check "partition alert rules pass promtool test rules" \
		promtool test rules "$SRC/rules/prometheus/recon.partitions.rules.test.yml"
else
	need promtool "package prometheus"
fi
finish
