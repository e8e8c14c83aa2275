#!/bin/sh
# Programs of the plain (cm) flow say in --help and at start that it is
# unauthenticated and unencrypted. Started on a device that does not exist,
# each prints its warning and exits (no server, no timing). bulk_read and
# sync_event (examples/common/two_procs.h) make no cm connection: they say
# what they do (details over a socketpair, no TLS, an unencrypted data
# connection), and refuse an argument they do not know.
#   plainwarn.sh RDMX_PERF RDMX_CALL PINGPONG HELLO_SERVER HELLO_CLIENT BULK_READ SYNC_EVENT
set -eu
PERF=$1 CALL=$2 PINGPONG=$3 HSRV=$4 HCLI=$5 BULK=$6 SYNC=$7
DIR=$(mktemp -d /tmp/rdmx-plainwarn-XXXXXX)
trap 'rm -rf "$DIR"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; [ -f "$DIR/err" ] && sed 's|^|stderr: |' "$DIR/err" >&2; exit 1; }
DEATH=
setpriv --pdeathsig KILL true 2>/dev/null && DEATH="setpriv --pdeathsig KILL"
unset RDMX_CA RDMX_CERT RDMX_KEY RDMX_REGISTRY || true

for p in "$PERF" "$CALL" "$PINGPONG" "$HSRV" "$HCLI"; do
	"$p" --help >"$DIR/help" 2>&1 || fail "$(basename "$p") --help failed"
	tr '\n' ' ' <"$DIR/help" | grep -q "plain cm flow.*unauthenticated and unencrypted" ||
		fail "$(basename "$p") --help does not say the plain cm flow is unauthenticated"
done
"$CALL" --help | grep -q -- "-plaintext" || fail "rdmx-call --help does not name -plaintext"

# start_warns NAME CMD...: exits (the device does not exist) after the line
# (WANT: the line; default: the plain cm flow's)
start_warns() {
	name=$1
	shift
	rc=0
	RDMX_DEVICE=no-such-device $DEATH timeout 60 "$@" </dev/null >/dev/null 2>"$DIR/err" || rc=$?
	[ $rc -ne 124 ] || fail "$name did not exit"
	want=${WANT:-"$name: warning: the plain cm flow is unauthenticated and unencrypted; use it only on a trusted network"}
	[ "$(grep -cxF "$want" "$DIR/err")" = 1 ] || fail "$name: not one line '$want'"
}
start_warns rdmx-perf "$PERF" send_lat -d no-such-device -p 1
start_warns rdmx-perf "$PERF" send_lat -d no-such-device 127.0.0.1
start_warns rdmx-call "$CALL" --timeout-ms 2000 127.0.0.1:1 list
start_warns rdmx-call "$CALL" -plaintext --timeout-ms 2000 127.0.0.1:1 list
start_warns rdmx-call "$CALL" --plaintext --timeout-ms 2000 127.0.0.1:1 list
start_warns pingpong "$PINGPONG" -d no-such-device server
start_warns hello_server "$HSRV" -p 1
start_warns hello_client "$HCLI" -p 1
for p in "$BULK" "$SYNC"; do
	name=$(basename "$p")
	"$p" --help >"$DIR/help" 2>&1 || fail "$name --help failed"
	grep -q "cm flow" "$DIR/help" && fail "$name --help speaks of the cm flow it does not use"
	tr '\n' ' ' <"$DIR/help" | grep -q "socketpair, without TLS" ||
		fail "$name --help does not say the details go over a socketpair without TLS"
	tr '\n' ' ' <"$DIR/help" | grep -q "neither encrypted nor authenticated" ||
		fail "$name --help does not say the data connection is unencrypted"
	WANT="$name: warning: no TLS: the connection details go over a socketpair on this host and the data connection is unencrypted; use it only on a trusted host" \
		start_warns "$name" "$p" -d no-such-device
	# an argument it does not know: the usage line on stderr, exit status 2
	for bad in --bogus extra "-d"; do
		rc=0
		"$p" "$bad" >"$DIR/out" 2>"$DIR/err" </dev/null || rc=$?
		[ $rc -eq 2 ] || fail "$name $bad: exit $rc, want 2"
		grep -qxF "usage: $name [-d DEVICE]" "$DIR/err" || fail "$name $bad: no usage line on stderr"
		[ -s "$DIR/out" ] && fail "$name $bad wrote to stdout"
		grep -q warning "$DIR/err" && fail "$name $bad started"
	done
done
echo "ok: plain flow warnings"
