#!/bin/sh
# Failover through the generated stubs' service channel (kv_KV_connect_service,
# kv_KV_<M>_balanced): three `rdmx-kv serve` instances register one service
# with rdmx-bootstrapd; failover_load makes 60 blocking calls, killing
# (SIGKILL) one instance right after the 20th, mid-load.
#  - get (NO_SIDE_EFFECTS in kv.proto): every call is answered (OK or
#    NOT_FOUND): calls lost with the instance are retried on another one;
#  - put (not idempotent): calls whose request may have reached the dead
#    instance fail with UNAVAILABLE (counted, never retried); calls that never
#    left the client are retried; nothing else fails.
# No timing: the kill happens at a call count; waits are for start-up lines.
#   failover.sh RDMX_KV RDMX_BOOTSTRAPD RDMX_CERTS FAILOVER_LOAD
set -eu
KV=$1 BSD=$2 CERTS=$3 LOAD=$4
. "$(dirname "$0")/../../support/lib.sh"
test_init rdmx-kv-failover
test_pki "$CERTS" kv.test registry.test client.test
start_bootstrapd "$BSD"

serve() { # NAME: a kv instance of service kv-fo (memory store), sets KV_PID
	$DEATH "$KV" serve --listen 127.0.0.1:0 --registry "$REG" --registry-name registry.test \
		--service kv-fo --ca "$P/ca.crt" --cert "$P/kv.test.crt" --key "$P/kv.test.key" \
		>"$DIR/$1.out" 2>"$DIR/$1.log" &
	KV_PID=$!
	PIDS="$PIDS $KV_PID"
	wait_line "$DIR/$1.out" registered
}
serve a; A=$KV_PID
serve b; B=$KV_PID
serve c

load() { # METHOD VICTIM: one load, its summary line in $DIR/METHOD.sum
	$DEATH "$LOAD" "$REG" kv-fo "$P/ca.crt" "$P/client.test.crt" "$P/client.test.key" \
		"$1" 60 20 "$2" >"$DIR/$1.sum" 2>"$DIR/$1.log" || fail "$1 load failed"
	cat "$DIR/$1.sum"
}
field() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$DIR/$1.sum"; }

load get "$A"
[ "$(field get calls)" = 60 ] || fail "get: summary line missing"
[ "$(field get unavailable)" = 0 ] || fail "get: $(field get unavailable) idempotent calls failed"
[ "$(field get other)" = 0 ] || fail "get: calls failed with local errors"
[ $(($(field get ok) + $(field get answered))) = 60 ] || fail "get: not every call answered"

load put "$B"
[ "$(field put calls)" = 60 ] || fail "put: summary line missing"
[ "$(field put other)" = 0 ] || fail "put: calls failed with local errors"
U=$(field put unavailable)
[ $(($(field put ok) + U)) = 60 ] || fail "put: a call neither acknowledged nor UNAVAILABLE"
# every failure is one that may have reached the dead instance, said so
[ "$(grep -c 'UNAVAILABLE' "$DIR/put.log" || true)" = "$U" ] || fail "put: failures not reported"
echo "kv-failover: get: 0 of 60 failed (retries $(field get retries)); put: $U of 60 failed UNAVAILABLE (retries $(field put retries))"
