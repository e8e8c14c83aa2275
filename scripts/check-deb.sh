#!/usr/bin/env bash
# The Debian package route:   scripts/check-deb.sh [BUILD_DIR]   (as root)
#
# Builds the packages from BUILD_DIR (cpack -G DEB: librdmx0, librdmx-dev,
# rdmx-tools, dependencies from dpkg-shlibdeps), checks what each holds and
# depends on, installs them with apt-get, runs the installed rdmx-kv --version,
# pkg-config, the systemd units check and scripts/demo's kv session with the
# installed programs, and removes the packages again: at the end and on any
# failure (trap), and first of all when an earlier run left them installed.
# Exit 77 (skipped) with the reason when not root or dpkg is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(cd "${1:-build}" && pwd)
pkgs=(rdmx-tools librdmx-dev librdmx0)

say() { echo "check-deb: $*"; }
fail() {
	echo "check-deb: FAILED: $*" >&2
	exit 1
}
if ! command -v dpkg >/dev/null || ! command -v apt-get >/dev/null; then
	say "SKIPPED: not a Debian system (no dpkg/apt-get)"
	exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	say "SKIPPED: installing packages needs root"
	exit 77
fi
command -v dpkg-shlibdeps >/dev/null || fail "dpkg-shlibdeps missing (scripts/deps.sh test installs dpkg-dev)"

installed() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q 'ok installed'; }
remove_all() {
	local left=()
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qv 'not-installed' && left+=("$p")
	done
	[ ${#left[@]} -eq 0 ] && return 0
	say "removing ${left[*]}"
	DEBIAN_FRONTEND=noninteractive dpkg --purge "${left[@]}" >/dev/null
}
out=$(mktemp -d /tmp/rdmx-deb.XXXXXX)
cleanup() {
	local rc=$?
	trap - EXIT
	remove_all || rc=1
	rm -rf "$out"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# leftovers of an earlier run (interrupted, or killed) go first
remove_all

# ---- build ----
say "cpack -G DEB in $build..."
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || {
	cat "$out/cpack.log" >&2
	fail "cpack -G DEB"
}
debs=("$out"/*.deb)
[ ${#debs[@]} -eq 3 ] || fail "expected 3 packages, cpack made: ${debs[*]##*/}"
field() { dpkg-deb -f "$1" "$2"; }
declare -A deb
for d in "${debs[@]}"; do deb[$(field "$d" Package)]=$d; done
for p in "${pkgs[@]}"; do
	[ -n "${deb[$p]:-}" ] || fail "no $p package (made: ${!deb[*]})"
	say "$p $(field "${deb[$p]}" Version): Depends: $(field "${deb[$p]}" Depends)"
done
version=$(field "${deb[librdmx0]}" Version)

# contents: each file in the package it belongs to
has() { dpkg-deb -c "${deb[$1]}" | awk '{print $6}' | grep -qE "$2" || fail "$1 has no file matching $2"; }
hasnt() { ! dpkg-deb -c "${deb[$1]}" | awk '{print $6}' | grep -qE "$2" || fail "$1 holds $2"; }
has librdmx0 '/librdmx\.so\.0$' && has librdmx0 '/librdmx_ev\.so\.0$' && has librdmx0 '/librdmx_secure_ev\.so\.0$'
hasnt librdmx0 '\.so$|\.a$|/include/|/bin/'
has librdmx-dev '/include/rdmx/rdmx\.h$' && has librdmx-dev '/include/rdmx/version\.h$'
has librdmx-dev '/librdmx\.so$' && has librdmx-dev '/librdmx\.a$'
for pc in rdmx rdmx_ev rdmx_secure_ev; do has librdmx-dev "/pkgconfig/$pc\.pc$"; done
has librdmx-dev '/cmake/rdmx/rdmxConfig\.cmake$' && has librdmx-dev '/bin/rdmx-gen$'
for p in rdmx-kv rdmx-bootstrapd rdmx-call rdmx-certs rdmx-registry rdmx-perf; do has rdmx-tools "/usr/bin/$p$"; done
has rdmx-tools '/lib/systemd/system/rdmx-bootstrapd\.service$' && has rdmx-tools '/lib/systemd/system/rdmx-kv\.service$'
# dependencies: from dpkg-shlibdeps (the system libraries), and between ours
dep() { field "${deb[$1]}" Depends | grep -qE "$2" || fail "$1 does not depend on $2"; }
nodep() { ! field "${deb[$1]}" Depends | grep -qE "$2" || fail "$1 depends on $2"; }
dep librdmx0 'libc6 \(>= ' && dep librdmx0 'libssl3' && dep librdmx0 'libev4'
# msgpack-c is the tests' oracle only: no package of ours needs it
for p in librdmx0 librdmx-dev rdmx-tools; do nodep "$p" 'libmsgpack'; done
dep rdmx-tools "librdmx0 \(= $version\)" && dep rdmx-tools 'libc6 \(>= '
dep librdmx-dev "librdmx0 \(= $version\)" && dep librdmx-dev 'libssl-dev' && dep librdmx-dev 'libev-dev'

# ---- install ----
say "apt-get install ${debs[*]##*/}"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" \
	>"$out/apt.log" 2>&1 || {
	cat "$out/apt.log" >&2
	fail "apt-get install"
}
for p in "${pkgs[@]}"; do installed "$p" || fail "$p is not installed after apt-get install"; done

# ---- the installed programs, in a clean environment ----
clean() { env -i PATH=/usr/bin:/bin HOME="$out" "$@"; }
got=$(clean rdmx-kv --version) || fail "rdmx-kv --version"
grep -qF "$version" <<<"$got" || fail "rdmx-kv --version printed '$got', not $version"
say "\$ rdmx-kv --version: $got"
[ "$(clean pkg-config --modversion rdmx)" = "$version" ] || fail "pkg-config --modversion rdmx"
for pc in rdmx_ev rdmx_secure_ev; do clean pkg-config --exists "$pc" || fail "pkg-config $pc"; done
rc=0
scripts/check-units.sh --dir /usr/lib/systemd/system || rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "the installed systemd units"
say "scripts/demo --installed /usr/bin (the kv session with the installed programs)"
clean RDMX_DEMO_DIR="$out/demo" "$root/scripts/demo" --installed /usr/bin || fail "the kv session"

# ---- remove ----
remove_all
for p in "${pkgs[@]}"; do ! installed "$p" || fail "$p still installed after dpkg --purge"; done
[ ! -e /usr/bin/rdmx-kv ] || fail "/usr/bin/rdmx-kv is still there after the purge"
say "ok: built, installed, ran and removed ${pkgs[*]}"
