# Shared start-up of the shell tests that run the programs (rdmx-kv,
# rdmx-bootstrapd, rdmx-certs): sourced, POSIX sh.
#   . "$(dirname "$0")/../../support/lib.sh"   (from tests/integration/<suite>/)
#   test_init NAME          DIR=$(mktemp -d /tmp/NAME-XXXXXX), PIDS, traps, DEATH
#   test_pki CERTS NAME...  a CA and one certificate per NAME in $DIR/pki (P)
#   start_bootstrapd BSD    rdmx-bootstrapd on 127.0.0.1:0 with registry.test's
#                           certificate; REG=its address
#   wait_line FILE WORD     waits for a line starting "WORD " (start-up only)
#   wait_for FILE REGEX     waits for a line matching REGEX (start-up only)
#   fail MESSAGE            prints it and the tails of $DIR/*.log, *.out; exit 1
# Children started as `$DEATH prog ... &` die with the script even when it
# is killed (util-linux setpriv); add their pids to PIDS: the EXIT trap kills
# them (SIGKILL) and removes $DIR. Waits are bounded (30 s) and only for
# start-up lines, never a timing check. FAIL_TAIL (default 20) is how many
# lines of each log fail shows (FAIL_ALL=1: of every file in $DIR, not only
# *.log and *.out); TEST_ON_CLEANUP, when set, is run first by the EXIT trap.

test_cleanup() {
	[ -n "${TEST_ON_CLEANUP:-}" ] && eval "$TEST_ON_CLEANUP"
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$DIR"
}

test_init() {
	DIR=$(mktemp -d "/tmp/$1-XXXXXX")
	PIDS=
	trap test_cleanup EXIT
	trap 'exit 1' INT TERM
	DEATH=
	setpriv --pdeathsig KILL true 2>/dev/null && DEATH="setpriv --pdeathsig KILL"
	export RDMX_DEVICE=tcp RDMX_REGISTRY= RDMX_CA= RDMX_CERT= RDMX_KEY=
}

fail() {
	echo "FAIL: $*" >&2
	if [ -n "${FAIL_ALL:-}" ]; then set -- "$DIR"/*; else set -- "$DIR"/*.log "$DIR"/*.out; fi
	for f in "$@"; do
		[ -f "$f" ] && tail -n "${FAIL_TAIL:-20}" "$f" | sed "s|^|$(basename "$f"): |" >&2
	done
	exit 1
}

wait_for() {
	_i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt 300 ] && fail "no '$2' in $1"
		sleep 0.1
	done
}

wait_line() {
	wait_for "$1" "^$2 "
}

test_pki() {
	_certs=$1
	shift
	"$_certs" init "$DIR/pki" >/dev/null
	for _n in "$@"; do "$_certs" issue "$DIR/pki" "$_n" >/dev/null; done
	P=$DIR/pki
}

start_bootstrapd() {
	$DEATH "$1" --listen 127.0.0.1:0 --ca "$P/ca.crt" --cert "$P/registry.test.crt" \
		--key "$P/registry.test.key" >"$DIR/bsd.out" 2>"$DIR/bsd.log" &
	PIDS="$PIDS $!"
	wait_line "$DIR/bsd.out" listening
	REG=127.0.0.1:$(awk '/^listening/ {print $3; exit}' "$DIR/bsd.out")
}
