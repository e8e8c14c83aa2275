#!/usr/bin/env bash
# Figures for docs/guide-cluster.md and issue 17's note (not a ctest: it
# prints numbers). A local three-member etcd cluster, two kv instances.
#   figures.sh BUILD_DIR
#   1. time from kill -9 of a kv instance (lease 2 s) to the watcher's
#      "expired" line, five times;
#   2. registry lookups (one process each, back to back) that failed while
#      an etcd follower, then the leader, were killed;
#   3. with one of two kv instances dead (kill -9, still registered: lease
#      30 s): health calls that failed out of 40 through the balancer
#      (rdmx-call --registry --service: unreachable members skipped) and out
#      of 40 to a registered member taken at random (no failover);
#   4. one of two kv instances killed (kill -9) after the 1000th of 2000
#      calls, mid-load, through the generated stubs' service channel
#      (tests/integration/kv/failover_load.c): gets with retries (Get is
#      NO_SIDE_EFFECTS in kv.proto), gets without (the balancer's pick, no
#      retry), puts (not idempotent: retried only when never sent);
#   5. 2000 gets through the balancer, the etcd leader killed after the
#      1000th: calls that failed while an etcd member died.
set -eu
B=$(cd "$1" && pwd)
KV=$B/services/kv/rdmx-kv REGISTRY=$B/tools/rdmx-registry/rdmx-registry
CERTS=$B/tools/rdmx-certs/rdmx-certs CALL=$B/tools/rdmx-call/rdmx-call
LOAD=$B/tests/integration/kv/kv_failover_load
. "$(dirname "$0")/../../../scripts/etcd-local.sh"
DIR=$(mktemp -d /tmp/rdmx-etcd-fig-XXXXXX)
PIDS=
DEATH="setpriv --pdeathsig KILL --"
cleanup() {
	for p in $PIDS; do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT
export RDMX_DEVICE=tcp RDMX_REGISTRY= RDMX_CA= RDMX_CERT= RDMX_KEY=
now_ms() { echo $(($(date +%s%N) / 1000000)); }
etcd_pki kv1.test kv2.test client.test
P=$DIR/pki
TLS="--ca $P/ca.crt --cert $P/client.test.crt --key $P/client.test.key"
etcd_cluster_start >/dev/null 2>&1
URL=$ETCD_URL
serve() { # NAME SERVICE TTL
	$DEATH "$KV" serve --listen 127.0.0.1:0 --registry "$URL" --service "$2" --ttl-ms "$3" \
		--ca "$P/ca.crt" --cert "$P/$1.test.crt" --key "$P/$1.test.key" >"$DIR/$1-$2.out" 2>&1 &
	LAST=$!
	PIDS="$PIDS $LAST"
}
count() { "$REGISTRY" --registry "$URL" $TLS lookup "$1" 2>/dev/null | grep -c '^member' || true; }
until_count() { n=0; until [ "$(count "$1")" = "$2" ]; do n=$((n + 1)); [ $n -gt 150 ] && { echo "timeout"; exit 1; }; sleep 0.2; done; }

# 1. detection
$DEATH "$REGISTRY" --registry "$URL" $TLS watch det >"$DIR/watch.out" 2>/dev/null &
PIDS="$PIDS $!"
sleep 0.5
for i in 1 2 3 4 5; do
	serve kv1 det 2000
	until_count det 1
	id=$("$REGISTRY" --registry "$URL" $TLS lookup det | awk '{print substr($2, 4)}')
	t0=$(now_ms)
	kill -KILL $LAST
	until grep -q "^expired id=$id " "$DIR/watch.out"; do sleep 0.02; done
	echo "detect dead member (lease 2000 ms): $(($(now_ms) - t0)) ms"
done

# 2. lookups while etcd members die
serve kv1 kv 2000
serve kv2 kv 2000
until_count kv 2
ok=0 bad=0
L=$(etcd_leader)
F=$((L % 3 + 1))
end=$(($(now_ms) + 12000))
killed=0
t_start=$(now_ms)
while [ "$(now_ms)" -lt $end ]; do
	el=$(($(now_ms) - t_start))
	if [ $killed = 0 ] && [ $el -gt 2000 ]; then etcd_kill $F; killed=1; fi
	if [ $killed = 1 ] && [ $el -gt 5000 ]; then etcd_start $F existing; killed=2; fi
	if [ $killed = 2 ] && [ $el -gt 8000 ]; then L=$(etcd_leader) && etcd_kill $L; killed=3; fi
	if [ "$(count kv)" = 2 ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
done
echo "registry lookups during follower kill (at 2 s) and leader kill (at 8 s): $bad failed or short of 2 members, $ok ok"
grep -h "membership lost" "$DIR"/kv*-kv.out | wc -l | sed 's/^/kv instances: registry memberships lost: /'
[ $killed = 3 ] && etcd_start $L existing && etcd_wait_healthy >/dev/null 2>&1 || true

# 3. one of two kv instances dead, still registered
serve kv1 kv30 30000
K1=$LAST
serve kv2 kv30 30000
until_count kv30 2
eps=$("$REGISTRY" --registry "$URL" $TLS lookup kv30 | sed -n 's/.* endpoint=\([^ ]*\) .*/\1/p')
kill -KILL $K1
fb=0
for i in $(seq 40); do
	"$CALL" --registry "$URL" --service kv30 $TLS --timeout-ms 3000 rdmx.health.v1.Health/Check '{}' \
		>/dev/null 2>&1 || fb=$((fb + 1))
done
fn=0
for i in $(seq 40); do
	ep=$(printf '%s\n' $eps | shuf -n 1)
	"$CALL" $TLS --timeout-ms 3000 "$ep" rdmx.health.v1.Health/Check '{}' >/dev/null 2>&1 ||
		fn=$((fn + 1))
done
echo "one of two kv instances dead: $fb of 40 calls failed with the balancer (failover), $fn of 40 without"

# 4. one of two kv instances killed mid-load, with and without retries
load() { # SERVICE MODE VICTIM_PID
	"$LOAD" "$URL" "$1" "$P/ca.crt" "$P/client.test.crt" "$P/client.test.key" "$2" 2000 1000 "$3" \
		2>/dev/null | sed 's/^calls \([0-9]*\) ok \([0-9]*\) answered \([0-9]*\) unavailable \([0-9]*\) other \([0-9]*\) retries \([0-9]*\)/\4 of \1 calls failed UNAVAILABLE (\5 other errors, \6 retries)/'
}
for mode in get get-once put; do
	svc=kvl-$mode
	serve kv1 "$svc" 30000
	K1=$LAST
	serve kv2 "$svc" 30000
	until_count "$svc" 2
	case $mode in
	get) what="gets with retries" ;;
	get-once) what="gets without retries" ;;
	put) what="puts (not idempotent)" ;;
	esac
	echo "one of two kv instances killed after call 1000, $what: $(load "$svc" $mode $K1)"
done

# 5. the etcd leader killed mid-load
serve kv1 kve 30000
serve kv2 kve 30000
until_count kve 2
L=$(etcd_leader)
eval lp=\$ETCD_PID$L
echo "etcd leader killed after call 1000 of 2000 gets through the balancer: $(load kve get "$lp")"
