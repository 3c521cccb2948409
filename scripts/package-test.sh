#!/bin/sh
# Builds the Debian package (cpack -G DEB), installs it with dpkg -i on this
# machine, runs the example job from the installed paths as the recon user,
# and purges the package again. Needs root; changes the machine (the package
# and the recon user), so .ci/run calls it on CI's own machine only.
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "package-test: needs root" >&2; exit 1; }
if dpkg-query -W -f='${Status}' recon 2>/dev/null | grep -q "install ok installed"; then
	echo "package-test: a recon package is already installed; not touching it" >&2
	exit 1
fi
build=build-deb
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DRECON_TESTS=OFF \
	-DRECON_WERROR=ON > /dev/null
cmake --build "$build" -j"$(nproc)"
(cd "$build" && cpack -G DEB > /dev/null)
deb=$(ls "$build"/recon_*.deb)
fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok - $*"; }
not_ok() { fails=$((fails + 1)); echo "not ok - $*"; }
check() {
	desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
work=/var/lib/recon/package-test
cleanup() {
	rm -rf "$work"
	dpkg --purge recon > /dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

check "the package depends on the runtime libraries by name" \
	sh -c "dpkg-deb -f '$deb' Depends | grep -q 'libjansson4' && dpkg-deb -f '$deb' Depends | grep -q 'libpq5'"
check "dpkg -i installs it" sh -c "dpkg -i '$deb' > /dev/null"
check "the recon user exists" id recon
check "/var/lib/recon belongs to recon" test "$(stat -c %U /var/lib/recon)" = recon
check "/etc/recon exists, group recon" test "$(stat -c %G /etc/recon)" = recon
check "the units are installed" test -f /usr/lib/systemd/system/recon-t1@.service
check "the units name /usr/bin/recon" grep -q '^ExecStart=/usr/bin/recon ' /usr/lib/systemd/system/recon-hot@.service
check "recon -V names the installed data folder" sh -c "/usr/bin/recon -V | grep -q '^data: /usr/share/recon$'"
check "man recon renders" sh -c "man -l /usr/share/man/man1/recon.1 > /dev/null 2>&1"

# the example job from the installed paths, as the recon user
rm -rf "$work"
cp -R /usr/share/doc/recon/examples/basic "$work"
# a tree where scripts/demo.sh ran packs its flow.db and state too: start from the sources
rm -rf "$work/flow.db" "$work/state"
cat /usr/share/recon/sql/sqlite/payment_flow.sql /usr/share/recon/sql/sqlite/merchant.sql \
	"$work/flow.sql" | sqlite3 "$work/flow.db"
chown -R recon:recon "$work"
check "validate as recon" runuser -u recon -- /usr/bin/recon validate -q -j "$work/job.json"
check "run as recon" runuser -u recon -- /usr/bin/recon run -q -j "$work/job.json" -d 2024-01-16
check "the run found the example's amount mismatch" \
	sh -c "runuser -u recon -- /usr/bin/recon diff -j '$work/job.json' --format jsonl | grep -q '\"class\":\"amount_mismatch\"'"
rm -rf "$work"
check "dpkg --purge removes it" sh -c "dpkg --purge recon > /dev/null"
check "the binary is gone" test ! -e /usr/bin/recon
check "nothing of it is left in /usr/share/recon" test ! -e /usr/share/recon
check "its empty folders are gone" sh -c "test ! -e /etc/recon && test ! -e /var/lib/recon"
echo "$passes passed, $fails failed"
[ "$fails" = 0 ]
