#!/bin/sh
# The argument convention of every rdmx program (tools/common/cli.h):
#   convention.sh VERSION PROG_PATH...
# For each program: --help exits 0 with the usage on stdout, --version exits 0
# and prints "PROG VERSION", --bogus exits 2 with exactly
# "PROG: unknown option '--bogus'", and a bad value given as --opt=value and
# as --opt value is named the same way (so both forms reach the parser).
set -u
version=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
no() { echo "FAIL: $*"; fail=1; }

# the option each program takes a number with, and whether it sits before a command
bad_value_args() {
	case $1 in
	rdmx-kv) echo "--timeout-ms=x get k|--timeout-ms x get k|--timeout-ms" ;;
	rdmx-bootstrapd) echo "--max-members=x|--max-members x|--max-members" ;;
	rdmx-registry) echo "--timeout-ms=x list|--timeout-ms x list|--timeout-ms" ;;
	rdmx-certs) echo "--days=x init d|--days x init d|--days" ;;
	rdmx-call) echo "--timeout-ms=x a:1 list|--timeout-ms x a:1 list|--timeout-ms" ;;
	rdmx-perf) echo "--size=x send_lat|--size x send_lat|--size" ;;
	rdmx-devices) echo "" ;;
	*) echo "" ;;
	esac
}

for path in "$@"; do
	prog=$(basename "$path")
	"$path" --help >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 0 ] || no "$prog --help exits $rc"
	grep -q "^usage: $prog" "$tmp/out" || no "$prog --help: no usage line on stdout"
	[ -s "$tmp/err" ] && no "$prog --help wrote to stderr"
	"$path" -h >"$tmp/out2" 2>/dev/null || no "$prog -h exits non-zero"
	cmp -s "$tmp/out" "$tmp/out2" || no "$prog -h differs from --help"

	out=$("$path" --version 2>"$tmp/err")
	rc=$?
	[ $rc -eq 0 ] || no "$prog --version exits $rc"
	[ "$out" = "$prog $version" ] || no "$prog --version printed '$out', want '$prog $version'"

	"$path" --bogus >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || no "$prog --bogus exits $rc, want 2"
	first=$(head -n 1 "$tmp/err")
	[ "$first" = "$prog: unknown option '--bogus'" ] ||
		no "$prog --bogus said '$first'"
	"$path" --bogus=1 >/dev/null 2>"$tmp/err"
	first=$(head -n 1 "$tmp/err")
	[ "$first" = "$prog: unknown option '--bogus'" ] ||
		no "$prog --bogus=1 said '$first'"

	spec=$(bad_value_args "$prog")
	if [ -n "$spec" ]; then
		opt=${spec##*|}
		for form in 1 2; do
			args=$(echo "$spec" | cut -d'|' -f$form)
			# shellcheck disable=SC2086
			(cd "$tmp" && "$path" $args >/dev/null 2>"$tmp/err")
			rc=$?
			[ $rc -eq 2 ] || no "$prog $args exits $rc, want 2"
			first=$(head -n 1 "$tmp/err")
			[ "$first" = "$prog: bad value 'x' for $opt" ] ||
				no "$prog $args said '$first'"
		done
	fi
	[ $fail -eq 0 ] && echo "ok: $prog"
done

# --opt=value accepted where it does work
for path in "$@"; do
	case $(basename "$path") in
	rdmx-certs)
		"$path" init "$tmp/ca" --days=30 >/dev/null 2>&1 || no "rdmx-certs init --days=30 failed"
		[ -f "$tmp/ca/ca.crt" ] || no "rdmx-certs --days=30: no ca.crt"
		"$path" issue "$tmp/ca" node1 --san=DNS:other.test --days=10 >/dev/null 2>&1 ||
			no "rdmx-certs issue --san=... --days=10 failed"
		"$path" issue "$tmp/ca" node2 --san IP:10.0.0.1 --san IP:::1 >/dev/null 2>&1 ||
			no "rdmx-certs issue --san IP:10.0.0.1 --san IP:::1 failed"
		# a bad --san is a usage error said in one line, before any file is written
		for san in FOO:bar IP:notanip DNS:; do
			"$path" issue "$tmp/ca" node3 --san "$san" >/dev/null 2>"$tmp/err"
			rc=$?
			[ $rc -eq 2 ] || no "rdmx-certs --san $san exits $rc, want 2"
			[ "$(cat "$tmp/err")" = "rdmx-certs: bad value '$san' for --san (want DNS:name or IP:address)" ] ||
				no "rdmx-certs --san $san said '$(cat "$tmp/err")'"
			[ -e "$tmp/ca/node3.key" ] && no "rdmx-certs --san $san wrote node3.key"
		done
		# a missing operand is named, not the commands
		for args in "issue $tmp/ca|NAME" "issue|DIR NAME" "init|DIR" "revoke $tmp/ca|NAME" \
			"crl|DIR"; do
			# shellcheck disable=SC2086
			"$path" ${args%%|*} >/dev/null 2>"$tmp/err"
			rc=$?
			[ $rc -eq 2 ] || no "rdmx-certs ${args%%|*} exits $rc, want 2"
			cmd=${args%% *}
			cmd=${cmd%%|*}
			grep -qx "rdmx-certs: $cmd: ${args#*|} missing (.*)" "$tmp/err" ||
				no "rdmx-certs ${args%%|*} said '$(cat "$tmp/err")'"
		done
		;;
	rdmx-devices)
		# the usage line names every short option the help lists, as the
		# man page's SYNOPSIS does
		"$path" --help >"$tmp/help"
		use=$(grep '^usage:' "$tmp/help")
		for o in $(sed -n 's/^  \(-[a-z]\), .*/\1/p' "$tmp/help"); do
			[ "$o" = -h ] && continue
			echo "$use" | grep -q -- "\[${o}[] ]" || no "rdmx-devices usage '$use' leaves out $o"
		done
		[ "$use" = "usage: rdmx-devices [-d DEV] [-l] [-v]" ] ||
			no "rdmx-devices usage '$use' is not the man page's synopsis"
		out=$("$path" --ib-dev=tcp)
		rc=$?
		[ $rc -eq 0 ] || no "rdmx-devices --ib-dev=tcp exits $rc"
		echo "$out" | grep -q "^hca_id:	tcp" || no "rdmx-devices --ib-dev=tcp: no tcp block"
		echo "$out" | grep -q "^	max_inline:	*1024$" || no "rdmx-devices --ib-dev=tcp: no max_inline 1024"
		out=$("$path" -d tcp -v)
		echo "$out" | grep -q "max_msg_sz:" || no "rdmx-devices -d tcp -v: no max_msg_sz"
		echo "$out" | grep -q "GID\[  0\]" || no "rdmx-devices -d tcp -v: no GID table"
		"$path" --ib-dev=nosuchdev >/dev/null 2>"$tmp/err"
		[ $? -eq 1 ] || no "rdmx-devices --ib-dev=nosuchdev: want exit 1"
		;;
	rdmx-kv)
		"$path" serve --listen=127.0.0.1:0 >/dev/null 2>"$tmp/err"
		[ $? -eq 2 ] || no "rdmx-kv serve without TLS files: want exit 2"
		grep -q "needs --listen, --ca, --cert and --key" "$tmp/err" ||
			no "rdmx-kv serve: the missing options are not named"
		"$path" serve --bogus >/dev/null 2>"$tmp/err"
		[ "$(head -n 1 "$tmp/err")" = "rdmx-kv: unknown option '--bogus'" ] ||
			no "rdmx-kv serve --bogus said '$(head -n 1 "$tmp/err")'"
		"$path" serve --ttl-ms=5 --listen :0 >/dev/null 2>"$tmp/err"
		[ "$(head -n 1 "$tmp/err")" = "rdmx-kv: bad value '5' for --ttl-ms" ] ||
			no "rdmx-kv serve --ttl-ms=5 said '$(head -n 1 "$tmp/err")'"
		;;
	esac
done
exit $fail
