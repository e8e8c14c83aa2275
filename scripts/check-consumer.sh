#!/usr/bin/env bash
# Checks an installed rdmx the way a new user meets it:   scripts/check-consumer.sh PREFIX
#
#  1. every installed ELF (PREFIX/bin/*, PREFIX/lib*/*.so*) has a relative
#     RUNPATH ($ORIGIN...), no absolute one;
#  2. every installed program answers --version (exit 0, the release in its
#     output, stdin at /dev/null, within 30 s) in a clean environment
#     (env -i PATH=/usr/bin:/bin: no LD_LIBRARY_PATH, no ldconfig);
#  3. every library links and runs through find_package(rdmx) (rdmx::rdmx,
#     rdmx::rdmx_ev, rdmx::rdmx_secure_ev, rdmx::rdmx_static) and through
#     pkg-config (rdmx, rdmx_ev, rdmx_secure_ev, rdmx --static);
#  4. the getting-started service (docs/getting-started.md section 3, its code
#     taken from the page itself) builds with find_package and with pkg-config,
#     runs, and answers calc_client and the installed rdmx-call.
# Everything runs with env -i PATH=/usr/bin:/bin HOME=<scratch>. Every wait is a
# blocking read with an upper bound. Exit status 0 only when all of it passed.
set -euo pipefail
prefix=${1:?usage: $0 PREFIX}
prefix=$(cd "$prefix" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/rdmx-consumer.XXXXXX)
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
say() { echo "check-consumer: $*"; }
fail() {
	echo "check-consumer: FAILED: $*" >&2
	exit 1
}
# a clean environment: what a user's fresh shell has, nothing of ours
clean() { env -i PATH=/usr/bin:/bin HOME="$work" "$@"; }

libdir=
for d in "$prefix"/lib "$prefix"/lib64 "$prefix"/lib/*-linux-gnu; do
	[ -f "$d/pkgconfig/rdmx.pc" ] && libdir=$d && break
done
[ -n "$libdir" ] || fail "no lib*/pkgconfig/rdmx.pc under $prefix"
pcpath=$libdir/pkgconfig
version=$(clean env PKG_CONFIG_PATH="$pcpath" pkg-config --modversion rdmx)
say "rdmx $version in $prefix (libraries in ${libdir#"$prefix"/})"

# ---- 1. relative RUNPATHs on every installed ELF ----
n=0
while IFS= read -r f; do
	head -c 4 "$f" | grep -q 'ELF' || continue
	rp=$(readelf -d "$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
	[ -n "$rp" ] || fail "$f has no RUNPATH"
	case ":$rp:" in
	*:/*) fail "$f has an absolute RUNPATH entry: $rp" ;;
	esac
	case "$rp" in
	'$ORIGIN'*) ;;
	*) fail "$f: RUNPATH '$rp' is not relative to \$ORIGIN" ;;
	esac
	n=$((n + 1))
done < <(find "$prefix/bin" "$libdir" -maxdepth 1 -type f \( -path "$prefix/bin/*" -o -name '*.so*' \) | sort)
[ $n -gt 0 ] || fail "no installed ELF files found"
say "$n installed ELF files, each with a relative RUNPATH"

# ---- 2. every installed program: --version in a clean environment ----
n=0
for p in "$prefix"/bin/*; do
	[ -f "$p" ] && [ -x "$p" ] || continue
	rc=0
	# stdin at /dev/null and a time bound: a program that waits for input
	# (protoc-gen-rdmx reads a request from stdin) fails here, never hangs
	out=$(clean timeout -k 5 30 "$p" --version </dev/null 2>&1) || rc=$?
	[ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "$(basename "$p") --version did not end within 30 s"
	[ $rc -eq 0 ] || fail "$(basename "$p") --version exited $rc: $out"
	grep -qF "$version" <<<"$out" || fail "$(basename "$p") --version does not say $version: $out"
	n=$((n + 1))
done
[ $n -gt 0 ] || fail "no programs in $prefix/bin"
say "$n installed programs answer --version ($version) with no LD_LIBRARY_PATH"

# ---- 3. every library through find_package and pkg-config ----
mkdir -p "$work/libs"
cat >"$work/libs/main.c" <<'C'
#include <rdmx/bootstrap.h>
#include <rdmx/ev.h>
#include <rdmx/rdmx.h>
#include <rdmx/rpc_secure.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
	size_t n = 0;
#ifdef ONLY_RDMX
	void *volatile ev = &n, *volatile secure_ev = &n;
#else
	/* one symbol of each library, so each must be linked and loaded */
	void *volatile ev = (void *)&rdmx_ev_attach;
	void *volatile secure_ev = (void *)&rdmx_rpc_secure_listen;
#endif

	if (strcmp(rdmx_version(), RDMX_VERSION_STRING) != 0)
		return 3;
	if (rdmx_dev_list(NULL, 0, &n) != 0 || n == 0 || !ev || !secure_ev)
		return 1;
	printf("consumer: rdmx %s, %zu device(s), strerror(E_INVAL)=%s\n", rdmx_version(), n,
	       rdmx_strerror(RDMX_E_INVAL));
	return 0;
}
C
cat >"$work/libs/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(rdmx REQUIRED COMPONENTS rdmx ev secure_ev static)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE rdmx::rdmx rdmx::rdmx_ev rdmx::rdmx_secure_ev)
add_executable(consumer_static main.c)
target_compile_definitions(consumer_static PRIVATE ONLY_RDMX)
target_link_libraries(consumer_static PRIVATE rdmx::rdmx_static)
CM
clean cmake -S "$work/libs" -B "$work/libs/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null ||
	fail "find_package(rdmx COMPONENTS rdmx ev secure_ev static)"
clean cmake --build "$work/libs/b" >/dev/null || fail "building against the CMake targets"
clean "$work/libs/b/consumer" || fail "the find_package consumer"
clean "$work/libs/b/consumer_static" || fail "the find_package consumer (rdmx::rdmx_static)"
say "find_package: rdmx::rdmx, rdmx::rdmx_ev, rdmx::rdmx_secure_ev, rdmx::rdmx_static link and run"

pc() { clean env PKG_CONFIG_PATH="$pcpath" pkg-config "$@"; }
# a program outside the system's library path finds its libraries through a
# RUNPATH of its own (the libdir pkg-config names)
rpath="-Wl,-rpath,$(pc --variable=libdir rdmx)"
# shellcheck disable=SC2046
clean cc -o "$work/libs/pc" "$work/libs/main.c" $(pc --cflags --libs rdmx rdmx_ev rdmx_secure_ev) \
	"$rpath" || fail "pkg-config --libs rdmx rdmx_ev rdmx_secure_ev"
clean "$work/libs/pc" || fail "the pkg-config consumer"
# the static librdmx alone (-l:librdmx.a), with what it needs (--static)
# shellcheck disable=SC2046
clean cc -DONLY_RDMX -o "$work/libs/pc_static" "$work/libs/main.c" \
	$(pc --cflags --static --libs rdmx | sed 's/-lrdmx\( \|$\)/-l:librdmx.a /') ||
	fail "pkg-config --static --libs rdmx"
clean "$work/libs/pc_static" || fail "the pkg-config consumer (static librdmx)"
say "pkg-config: rdmx, rdmx_ev, rdmx_secure_ev (and rdmx --static) link and run"

# ---- 4. the getting-started service, from the page itself ----
doc=$root/docs/getting-started.md
calc=$work/calc
mkdir -p "$calc"
# section 3's fenced blocks, in order: calc.proto, CMakeLists.txt, server.c, client.c
awk -v dir="$calc" '
	/^## 3\./ { on = 1; next }
	/^## / && on { exit }
	on && /^```(proto|cmake|c)$/ { n++; file = n == 1 ? "calc.proto" : n == 2 ? "CMakeLists.txt" : n == 3 ? "server.c" : n == 4 ? "client.c" : ""; inblk = 1; next }
	inblk && /^```$/ { inblk = 0; next }
	inblk && file != "" { print > (dir "/" file) }
' "$doc"
for f in calc.proto CMakeLists.txt server.c client.c; do
	[ -s "$calc/$f" ] || fail "docs/getting-started.md section 3 has no $f block"
done

# with find_package (rdmx_generate runs the installed rdmx-gen)
clean cmake -S "$calc" -B "$calc/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null ||
	fail "configuring the getting-started service"
clean cmake --build "$calc/build" >"$work/calc-build.log" 2>&1 || {
	cat "$work/calc-build.log" >&2
	fail "building the getting-started service (find_package)"
}
# with pkg-config (rdmx-gen by hand)
mkdir -p "$calc/pc"
clean "$prefix/bin/rdmx-gen" --out "$calc/pc" "$calc/calc.proto" || fail "rdmx-gen calc.proto"
# shellcheck disable=SC2046
clean cc -o "$calc/pc/calc_server" -I"$calc/pc" "$calc/server.c" "$calc/pc/calc.rdmx.c" \
	$(pc --cflags --libs rdmx_secure_ev) "$rpath" || fail "building calc_server with pkg-config"
# shellcheck disable=SC2046
clean cc -o "$calc/pc/calc_client" -I"$calc/pc" "$calc/client.c" "$calc/pc/calc.rdmx.c" \
	$(pc --cflags --libs rdmx) "$rpath" || fail "building calc_client with pkg-config"
say "the getting-started service builds with find_package and with pkg-config"

# certificates with the installed rdmx-certs, then run it as the page does (from $calc)
cd "$calc"
clean "$prefix/bin/rdmx-certs" init pki >/dev/null || fail "rdmx-certs init pki"
for n in calc.local client.local; do
	clean "$prefix/bin/rdmx-certs" issue pki $n >/dev/null || fail "rdmx-certs issue pki $n"
done
TLS=(--ca pki/ca.crt --cert pki/client.local.crt --key pki/client.local.key)
want=$(awk '/^calc\.Calc$/ {on = 1} on && /^```/ {exit} on' "$doc") # its "list" output
for variant in build pc; do
	mkfifo "$work/server.out"
	# exec: $! is the server itself (env execs it), so the kill below reaches it
	(exec env -i PATH=/usr/bin:/bin HOME="$work" "$calc/$variant/calc_server") \
		>"$work/server.out" 2>"$work/server.log" &
	server_pid=$!
	exec 3<"$work/server.out"
	line=
	read -r -t 60 -u 3 line || true
	case "$line" in
	"calc_server: listening on 127.0.0.1:19600") ;;
	*)
		cat "$work/server.log" >&2
		fail "calc_server ($variant) did not start: '$line'"
		;;
	esac
	got=$(clean "$calc/$variant/calc_client" 2 40) || fail "calc_client 2 40 ($variant)"
	[ "$got" = "2 + 40 = 42" ] || fail "calc_client 2 40 printed '$got'"
	reply=$(clean "$prefix/bin/rdmx-call" "${TLS[@]}" 127.0.0.1:19600 calc.Calc/Add '{"a": 2, "b": 40}') ||
		fail "rdmx-call calc.Calc/Add ($variant)"
	grep -q '"sum": 42' <<<"$reply" || fail "rdmx-call calc.Calc/Add returned: $reply"
	# the services the page shows for "rdmx-call ... list", line for line
	listed=$(clean "$prefix/bin/rdmx-call" "${TLS[@]}" 127.0.0.1:19600 list) ||
		fail "rdmx-call list ($variant)"
	[ -n "$want" ] && [ "$listed" = "$want" ] ||
		fail "rdmx-call list printed '$listed', the page shows '$want'"
	kill -TERM "$server_pid"
	wait "$server_pid" 2>/dev/null || true
	server_pid=
	exec 3<&-
	rm -f "$work/server.out"
	say "getting-started service ($variant): calc_client 2 40 = 42, rdmx-call calc.Calc/Add {\"sum\": 42}"
done
say "ok"
