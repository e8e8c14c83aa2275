#!/usr/bin/env bash
# scripts/demo --etcd: the kv session of services/kv/demo.sh over etcd.
#   services/kv/demo-etcd.sh BUILD_DIR
#
# A local three-member etcd cluster (127.0.0.1, mutual TLS for clients and
# peers, certificates from rdmx-certs), two kv instances that join it
# (--registry etcd://...), a client session that finds both there (keys
# spread by rendezvous hashing, scans merged), and one etcd member killed
# (kill -9) in the middle of the session: the rest of the session, the
# one-shot commands and the registry listing go on through the others.
# Needs etcd (Debian: etcd-server etcd-client). Every wait is bounded.
set -euo pipefail
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: services/kv/demo-etcd.sh BUILD_DIR" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KV=$BUILD/services/kv/rdmx-kv
REGISTRY=$BUILD/tools/rdmx-registry/rdmx-registry
CERTS=$BUILD/tools/rdmx-certs/rdmx-certs
for p in "$KV" "$REGISTRY" "$CERTS"; do
	[ -x "$p" ] || { echo "demo: $p is missing (build first)" >&2; exit 1; }
done
. "$ROOT/scripts/etcd-local.sh"
if [ -z "$ETCD_BIN" ] || [ -z "$ETCDCTL_BIN" ]; then
	echo "demo: etcd is not installed (apt-get install etcd-server etcd-client)" >&2
	exit 1
fi
DIR=$(mktemp -d /tmp/rdmx-kv-demo-etcd-XXXXXX)
PIDS=
DEATH="setpriv --pdeathsig KILL --"
say() { echo "demo: $*"; }
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null || true; done
	sleep 0.3
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ $rc -ne 0 ]; then
		for f in "$DIR"/kv*.log; do [ -s "$f" ] && sed "s|^|  $(basename "$f" .log): |" "$f" >&2; done
	fi
	rm -rf "$DIR"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "demo: FAILED: $*" >&2; exit 1; }

say "making a cluster CA and certificates (etcd members, two kv instances, a client)..."
etcd_pki kv1.demo.local kv2.demo.local client.demo.local
P=$DIR/pki
TLS=(--ca "$P/ca.crt" --cert "$P/client.demo.local.crt" --key "$P/client.demo.local.key")

say "starting a three-member etcd cluster on 127.0.0.1 (mutual TLS, --client-cert-auth)..."
etcd_cluster_start >/dev/null 2>&1 || fail "the etcd cluster did not start"
URL=$ETCD_URL
say "etcd is up: $URL"

for n in 1 2; do
	$DEATH "$KV" serve --listen 127.0.0.1:0 --registry "$URL" --service kv --ttl-ms 3000 \
		--ca "$P/ca.crt" --cert "$P/kv$n.demo.local.crt" --key "$P/kv$n.demo.local.key" \
		>"$DIR/kv$n.out" 2>"$DIR/kv$n.log" &
	PIDS="$PIDS $!"
done
i=0
until [ "$("$REGISTRY" --registry "$URL" "${TLS[@]}" lookup kv 2>/dev/null | grep -c '^member')" = 2 ]; do
	i=$((i + 1))
	[ $i -gt 100 ] && fail "the kv instances did not register within 20 s"
	sleep 0.2
done
say "two kv instances registered with etcd:"
"$REGISTRY" --registry "$URL" "${TLS[@]}" lookup kv | sed 's/^/  /'

KVC=("$KV" --registry "$URL" "${TLS[@]}")
say "client session, first half (keys spread over both instances):"
"${KVC[@]}" session - <<SESSION || fail "the first half of the session"
put user:1 alice
put user:2 bob
put user:3 "carol and dave"
get user:1 = alice
get user:2 = bob
scan user: = 3
SESSION

L=$(etcd_leader) || fail "no etcd leader"
V=$((L % 3 + 1))
say "killing etcd member m$V (kill -9) in the middle of the session..."
etcd_kill $V

say "client session, second half (the registry is now two members of three):"
"${KVC[@]}" session - <<SESSION || fail "the second half of the session"
get user:3 = "carol and dave"
put blob --random 4M
get blob = --random 4M
del user:2
get user:2 = --missing
scan user: = 2
SESSION

say "one-shot commands and the registry, with m$V still dead:"
got=$("${KVC[@]}" get user:1) || fail "rdmx-kv get user:1"
[ "$got" = alice ] || fail "rdmx-kv get user:1 printed '$got'"
echo "  \$ rdmx-kv --registry $URL get user:1"
echo "  $got"
echo "  \$ rdmx-registry --registry $URL list"
"$REGISTRY" --registry "$URL" "${TLS[@]}" list | sed 's/^/  /'
[ "$("$REGISTRY" --registry "$URL" "${TLS[@]}" lookup kv | grep -c '^member')" = 2 ] ||
	fail "the kv instances are not both registered after the kill"
say "etcd session ok: every value read back is right with one etcd member dead"
