#!/usr/bin/env bash
# Checks the systemd units (dist/systemd/*.service.in) as installed:
#   scripts/check-units.sh [BUILD_DIR]       installs BUILD_DIR's tools component
#                                            into a scratch prefix and checks there
#   scripts/check-units.sh --dir UNITDIR     checks the units already in UNITDIR
#                                            (a package install: /usr/lib/systemd/system)
# Each unit: `systemd-analyze verify` clean (no output at all), ExecStart names
# an installed program, and the promised settings are there (Type=notify,
# LimitMEMLOCK=infinity, the sandbox). Exit 77 (skipped) with the reason when
# systemd-analyze is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
units=(rdmx-bootstrapd.service rdmx-kv.service)
prefix=
cleanup() { [ -z "$prefix" ] || rm -rf "$prefix"; }
trap cleanup EXIT
fail() {
	echo "check-units: FAILED: $*" >&2
	exit 1
}

if [ "${1:-}" = --dir ]; then
	unitdir=${2:?usage: $0 --dir UNITDIR}
else
	build=${1:-build}
	prefix=$(mktemp -d /tmp/rdmx-units.XXXXXX)
	cmake --install "$build" --prefix "$prefix" --component tools >/dev/null ||
		fail "cmake --install $build --component tools"
	unitdir=$prefix/lib/systemd/system
fi

if ! command -v systemd-analyze >/dev/null; then
	echo "check-units: SKIPPED: systemd-analyze is not installed (Debian package systemd)," \
		"the units in $unitdir were not verified"
	exit 77
fi

for u in "${units[@]}"; do
	f=$unitdir/$u
	[ -f "$f" ] || fail "$f is not installed"
	exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$f")
	[ -x "$exe" ] || fail "$u: ExecStart names $exe, which is not an installed program"
	if [ -n "$prefix" ]; then
		case "$exe" in "$prefix"/bin/*) ;; *) fail "$u: ExecStart $exe is not under $prefix/bin" ;; esac
	fi
	for want in Type=notify LimitMEMLOCK=infinity DynamicUser=yes NoNewPrivileges=yes \
		ProtectSystem=strict ProtectHome=yes PrivateTmp=yes CapabilityBoundingSet= \
		'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK' \
		SystemCallFilter=@system-service; do
		grep -qx "$want" "$f" || fail "$u: no '$want' line"
	done
	out=$(systemd-analyze verify --man=no "$f" 2>&1) || fail "systemd-analyze verify $u: $out"
	[ -z "$out" ] || fail "systemd-analyze verify $u says: $out"
	# the sandbox's exposure score (0 best, 10 worst), for the record
	score=$(systemd-analyze security --offline=yes "$f" 2>/dev/null |
		sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p') || true
	echo "check-units: $u: systemd-analyze verify clean; exposure ${score:-?} (systemd-analyze security --offline=yes)"
done
echo "check-units: ok"
