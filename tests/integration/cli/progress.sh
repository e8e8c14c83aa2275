#!/bin/sh
# The progress meter draws on a terminal only, and never with --quiet:
#   progress.sh PROBE
set -u
probe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
"$probe" 2>"$tmp/err" >/dev/null
[ -s "$tmp/err" ] && { echo "FAIL: progress bytes written to a file"; fail=1; }
"$probe" 2>&1 | cat >"$tmp/pipe"
[ -s "$tmp/pipe" ] && { echo "FAIL: progress bytes written to a pipe"; fail=1; }
if ! command -v script >/dev/null 2>&1; then
	echo "SKIP (loud): script(1) from util-linux is missing: the terminal path is not checked"
	exit $fail
fi
script -qc "'$probe'" /dev/null </dev/null >"$tmp/tty" 2>&1
grep -q "probe: 64.0 MiB / 64.0 MiB" "$tmp/tty" || { echo "FAIL: no meter on a terminal"; fail=1; }
grep -q "left" "$tmp/tty" || { echo "FAIL: no time left on a terminal"; fail=1; }
grep -q "timed: " "$tmp/tty" || { echo "FAIL: no timed meter on a terminal"; fail=1; }
script -qc "'$probe' --quiet" /dev/null </dev/null >"$tmp/ttyq" 2>&1
grep -q "probe" "$tmp/ttyq" && { echo "FAIL: --quiet still draws on a terminal"; fail=1; }
[ $fail -eq 0 ] && echo "ok: progress meter"
exit $fail
