#!/bin/sh
# Installs the Debian 12 packages recon needs. Idempotent: packages already
# installed are left alone, and apt is not touched at all when nothing is missing.
#   scripts/install-deps.sh          build + run (the quick start)
#   scripts/install-deps.sh --test   also what the tests need (database servers, Prometheus and
#                                    node_exporter, systemd-analyze)
# Works as root, or through sudo for a normal user.
set -eu

pkgs="build-essential cmake pkg-config tzdata sqlite3 libsqlite3-dev libcsv-dev libjansson-dev \
libpq-dev default-libmysqlclient-dev libcmocka-dev zlib1g-dev libisal-dev libssl-dev"
if [ "${1:-}" = "--test" ]; then
	pkgs="$pkgs postgresql mariadb-server mariadb-client prometheus prometheus-node-exporter curl \
systemd groff-base man-db clang clang-format libclang-rt-14-dev iproute2 procps jq python3 chromium \
tidy python3-yaml time"
fi

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "install-deps: missing packages:$missing; run as root or install sudo" >&2
	exit 1
fi
echo "install-deps: installing$missing" >&2
$SUDO apt-get update -qq
# policy-rc.d-style: never start the system's own database services for us
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
# The test servers are throwaway instances started by tests/db/servers.sh;
# stop any system instance the packages may have started (containers usually don't).
if [ "${1:-}" = "--test" ]; then
	$SUDO systemctl stop postgresql mariadb prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
