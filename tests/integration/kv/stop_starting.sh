#!/bin/sh
# A stop asked while rdmx-kv serve is still starting is a clean stop: the
# server is listening and joining a registry that does not answer (a
# frozen rdmx-bootstrapd: the join waits for its timeout) when SIGTERM
# comes; it must not die of the signal (exit 143) but end as a stop does:
# exit 0, the "stopped" line, never registered. No timing: the signal goes
# after the start-up line, the join cannot finish before it.
#   stop_starting.sh RDMX_KV RDMX_BOOTSTRAPD RDMX_CERTS
set -eu
KV=$1 BSD=$2 CERTS=$3
. "$(dirname "$0")/../../support/lib.sh"
test_init rdmx-kv-stop-starting
test_pki "$CERTS" kv.test registry.test
start_bootstrapd "$BSD"
BSD_PID=${PIDS##* }
TEST_ON_CLEANUP="kill -CONT $BSD_PID 2>/dev/null || true"
kill -STOP "$BSD_PID"

$DEATH "$KV" serve --listen 127.0.0.1:0 --registry "$REG" --registry-name registry.test \
	--ca "$P/ca.crt" --cert "$P/kv.test.crt" --key "$P/kv.test.key" \
	>"$DIR/kv.out" 2>"$DIR/kv.log" &
KV_PID=$!
PIDS="$PIDS $KV_PID"
wait_line "$DIR/kv.out" listening
kill -TERM "$KV_PID"
rc=0
wait "$KV_PID" || rc=$?
[ "$rc" = 0 ] || fail "rdmx-kv serve ended with status $rc on SIGTERM while starting"
grep -q "^rdmx-kv: stopped " "$DIR/kv.log" || fail "no 'stopped' line"
grep -q "^registered " "$DIR/kv.out" && fail "registered with a frozen registry"
echo "ok: SIGTERM while joining the registry stops rdmx-kv serve cleanly"
