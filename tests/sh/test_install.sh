#!/bin/sh
# The install an operator does: `cmake --install` into a prefix puts every
# file in its FHS place; the installed binary finds its format profiles
# relative to itself, a copy of the binary anywhere falls back to the
# profiles compiled into it, and an unknown profile's error names every
# folder searched. The systemd units pass `systemd-analyze verify` and rate
# at most 3.0 in `systemd-analyze security` (when systemd-analyze exists).
. "$(dirname "$0")/lib.sh"

BUILD=$(dirname "$RECON")
P=$WORK/prefix
cmake --install "$BUILD" --prefix "$P" > "$WORK/install.log"

for f in bin/recon share/recon/formats/wechatpay-trade-bill.json \
	share/recon/formats/alipay-trade-bill.json share/recon/formats/stripe-itemized.json \
	share/recon/sql/postgres/merchant.sql share/recon/sql/mysql/payment_flow.sql \
	share/recon/sql/sqlite/merchant.sql share/recon/prometheus/recon.rules.yml \
	share/recon/grafana/recon.dashboard.json share/bash-completion/completions/recon \
	share/doc/recon/examples/basic/job.json share/doc/recon/examples/etc/example_payments.json \
	share/doc/recon/examples/recon.crontab lib/sysusers.d/recon.conf lib/tmpfiles.d/recon.conf; do
	check "installed $f" test -s "$P/$f"
done
for m in share/man/man1/recon.1 share/man/man5/recon-job.5; do
	check "installed $m" test -s "$P/$m"
	if command -v groff > /dev/null 2>&1; then
		check "$m renders without warnings (groff -ww)" \
			sh -c "groff -ww -z -man -Tutf8 '$P/$m' 2>&1 | { ! grep -q .; }"
	fi
done
for u in recon-hot@.service recon-hot@.timer recon-t1@.service recon-t1@.timer; do
	check "installed unit $u" test -s "$P/lib/systemd/system/$u"
done

check "the bash completion parses" bash -n "$P/share/bash-completion/completions/recon"
check "the completion offers validate" bash -c ". '$P/share/bash-completion/completions/recon'; COMP_WORDS=(recon va); COMP_CWORD=1; _recon; [ \"\${COMPREPLY[*]}\" = validate ]"

# a job naming a profile, outside the source tree
J=$WORK/job
mkdir -p "$J"
cp -R "$SRC/tests/cases/wechatpay_bill/statements" "$SRC/tests/cases/wechatpay_bill/job.json" "$J/"
cat "$SRC/sql/sqlite/payment_flow.sql" "$SRC/sql/sqlite/merchant.sql" \
	"$SRC/tests/cases/wechatpay_bill/flow.sql" | sqlite3 "$J/flow.db"
cd "$WORK"
expect_exit 0 "installed binary finds the shipped profile" \
	"$P/bin/recon" run --job "$J/job.json" --date 2024-01-16 --dry-run --quiet

# the installed data folder wins over the compiled-in copies: a profile that
# only exists there is found
sed 's/"wechatpay-trade-bill"/"site-local"/' "$J/job.json" > "$J/local.json"
cp "$P/share/recon/formats/wechatpay-trade-bill.json" "$P/share/recon/formats/site-local.json"
expect_exit 0 "profile found relative to the installed binary" \
	"$P/bin/recon" run --job "$J/local.json" --date 2024-01-16 --dry-run --quiet

# a copy of the binary with no data folder beside it: the compiled-in copies
mkdir -p "$WORK/elsewhere/bin"
cp "$RECON" "$WORK/elsewhere/bin/recon"
expect_exit 0 "a copied binary reads the compiled-in profiles" \
	"$WORK/elsewhere/bin/recon" run --job "$J/job.json" --date 2024-01-16 --dry-run --quiet

sed 's/"wechatpay-trade-bill"/"no-such-profile"/' "$J/job.json" > "$J/bad.json"
expect_exit 78 "an unknown profile is a job error" \
	"$P/bin/recon" run --job "$J/bad.json" --date 2024-01-16 --dry-run --quiet
check "the error names the job's folders" grep -qF "$J/{formats,rules/formats" "$WORK/err"
check "the error names the installed data folder" grep -qF "$P/share/recon/formats" "$WORK/err"
check "the error names the built-in copies" grep -qF "not built in" "$WORK/err"
RECON_FORMATS_DIR=$WORK/site expect_exit 78 "RECON_FORMATS_DIR is searched too" \
	"$P/bin/recon" run --job "$J/bad.json" --date 2024-01-16 --dry-run --quiet
check "the error names RECON_FORMATS_DIR" grep -qF "$WORK/site" "$WORK/err"

# ---- systemd units ---------------------------------------------------------
if command -v systemd-analyze > /dev/null 2>&1; then
	U=$WORK/units
	mkdir -p "$U"
	for u in recon-hot@.service recon-t1@.service; do
		# the units name the configured prefix's binary; verify needs one that exists
		sed "s#^ExecStart=[^ ]*/recon #ExecStart=$P/bin/recon #" \
			"$P/lib/systemd/system/$u" > "$U/$u"
	done
	cp "$P/lib/systemd/system/"*.timer "$U/"
	cd "$U"
	expect_exit 0 "systemd-analyze verify" systemd-analyze verify --man=no \
		recon-hot@x.service recon-hot@x.timer recon-t1@x.service recon-t1@x.timer
	check "verify printed nothing" test ! -s "$WORK/err"
	for u in recon-hot@.service recon-t1@.service; do
		systemd-analyze security --offline=true "$u" > "$WORK/sec" 2>&1 || true
		score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$WORK/sec")
		echo "# $u exposure $score"
		check "$u exposure $score <= 3.0" awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 3.0) }'
		check "$u has no SuccessExitStatus" sh -c "! grep -q SuccessExitStatus '$U/$u'"
		check "$u writes Debian's textfile folder" grep -q "/var/lib/prometheus/node-exporter" "$U/$u"
	done
	cd "$WORK"
elif [ "${CI:-}" = true ]; then
	not_ok "systemd-analyze is missing (package systemd)"
else
	echo "skip - systemd-analyze not installed"
fi
finish
