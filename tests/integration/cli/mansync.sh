#!/bin/sh
# Every long option PROG --help prints appears in man/PROG.1.scd and every
# long option of the man page appears in --help:
#   mansync.sh MAN_DIR PROG_PATH...
set -u
man=$1
shift
fail=0
opts() { grep -o -- '--[a-z][a-z0-9_-]*' | grep -vx -- '--bogus' | sort -u; }
for path in "$@"; do
	prog=$(basename "$path")
	page="$man/$prog.1.scd"
	if [ ! -f "$page" ]; then
		echo "FAIL: no man page $page"
		fail=1
		continue
	fi
	help=$("$path" --help | opts)
	doc=$(opts <"$page")
	only_help=$(printf '%s\n' "$help" | grep -vxF -e "$(printf '%s\n' "$doc")")
	only_man=$(printf '%s\n' "$doc" | grep -vxF -e "$(printf '%s\n' "$help")")
	if [ -n "$only_help" ]; then
		echo "FAIL: $prog --help has options missing from $page:" $only_help
		fail=1
	fi
	if [ -n "$only_man" ]; then
		echo "FAIL: $page has options missing from $prog --help:" $only_man
		fail=1
	fi
	grep -q '^# EXIT STATUS' "$page" || { echo "FAIL: $page: no EXIT STATUS"; fail=1; }
	grep -q '^# ENVIRONMENT' "$page" || { echo "FAIL: $page: no ENVIRONMENT"; fail=1; }
	grep -q 'Usage error' "$page" || { echo "FAIL: $page: exit status 2 not said"; fail=1; }
	[ $fail -eq 0 ] && echo "ok: $prog"
done
exit $fail
