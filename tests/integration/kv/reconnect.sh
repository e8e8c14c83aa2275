#!/bin/sh
# The rdmx-kv client retries idempotent calls on a new connection: one
# session (one client process, its connections kept) against two instances
# of a service; it puts 20 keys (rendezvous hashing spreads them); instance
# a is killed (SIGKILL) and started again on the same address and --data
# directory; then the same session gets every key back: a get whose
# connection was lost goes again on a new connection to its key's instance
# (Get is NO_SIDE_EFFECTS in kv.proto), so none fails. No timing: the
# session goes in lockstep with its replies; waits are for start-up lines.
#   reconnect.sh RDMX_KV RDMX_BOOTSTRAPD RDMX_CERTS
set -eu
KV=$1 BSD=$2 CERTS=$3
. "$(dirname "$0")/../../support/lib.sh"
FAIL_TAIL=30
TEST_ON_CLEANUP='exec 3>&- 2>/dev/null || true'
test_init rdmx-kv-reconnect
test_pki "$CERTS" kv.test registry.test client.test
TLS="--ca $P/ca.crt --cert $P/client.test.crt --key $P/client.test.key"
start_bootstrapd "$BSD"

serve() { # NAME LISTEN: an instance of kv-rc on $DIR/NAME.data, sets KV_PID
	# (without the session's command pipe: the session ends at its EOF)
	$DEATH "$KV" serve --listen "$2" --registry "$REG" --registry-name registry.test \
		--service kv-rc --data "$DIR/$1.data" --ca "$P/ca.crt" --cert "$P/kv.test.crt" \
		--key "$P/kv.test.key" >>"$DIR/$1.out" 2>>"$DIR/$1.log" 3>&- &
	KV_PID=$!
	PIDS="$PIDS $KV_PID"
}
serve a 127.0.0.1:0
A=$KV_PID
wait_for "$DIR/a.out" "^registered "
A_ADDR=$(sed -n 's/^registered .*endpoint=\([^ ]*\).*/\1/p' "$DIR/a.out" | head -n 1)
serve b 127.0.0.1:0
wait_for "$DIR/b.out" "^registered "

mkfifo "$DIR/cmd"
$DEATH "$KV" --registry "$REG" --registry-name registry.test --service kv-rc $TLS \
	--timeout-ms 10000 -v session - <"$DIR/cmd" >"$DIR/session.out" 2>"$DIR/session.log" &
SESSION=$!
PIDS="$PIDS $SESSION"
exec 3>"$DIR/cmd"
i=0
while [ $i -lt 20 ]; do echo "put k$i v$i" >&3; i=$((i + 1)); done
echo "echo puts-done" >&3
wait_for "$DIR/session.out" "^puts-done"
grep -q "FAIL\|UNAVAILABLE" "$DIR/session.out" && fail "a put failed before the kill"

kill -KILL "$A"
wait "$A" 2>/dev/null || true
: >"$DIR/a.out"
serve a "$A_ADDR"
wait_for "$DIR/a.out" "^registered "

i=0
while [ $i -lt 20 ]; do echo "get k$i = v$i" >&3; i=$((i + 1)); done
exec 3>&-
wait "$SESSION" || fail "the session failed after the restart"
grep -q "every value read back is right" "$DIR/session.out" || fail "values not read back"
grep -q "retrying on a new connection" "$DIR/session.log" ||
	fail "no retry: no get went to the restarted instance"
echo "kv-reconnect: 20 gets after instance a restarted, $(grep -c 'retrying on a new connection' "$DIR/session.log") retried on a new connection, none failed"
