#!/bin/sh
# End to end over loopback: rdmx-certs makes a cluster, rdmx-bootstrapd serves
# it with a policy, rdmx-registry joins, lists, looks up and watches; a
# revoked certificate and a refused service are checked too.
# usage: programs.sh RDMX_CERTS RDMX_BOOTSTRAPD RDMX_REGISTRY
set -eu
CERTS=$1 BSD=$2 REG=$3
DIR=$(mktemp -d /tmp/rdmx-programs-XXXXXX)
BSD_PID= JOIN_PID= WATCH_PID=
cleanup() {
	for p in $JOIN_PID $WATCH_PID $BSD_PID; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*" >&2; for f in "$DIR"/*.log "$DIR"/*.out; do [ -f "$f" ] && sed "s|^|$(basename "$f"): |" "$f" >&2; done; exit 1; }

# waits (bounded) until FILE has a line matching PATTERN
wait_for() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1)); [ $i -gt 100 ] && fail "no '$2' in $1"
		sleep 0.1
	done
}

# two commands for a newcomer
"$CERTS" init "$DIR/pki" >/dev/null
for n in bootstrap.svc.local kv1.svc.local web.svc.local gone.svc.local; do
	"$CERTS" issue "$DIR/pki" $n >/dev/null
done
[ "$(stat -c %a "$DIR/pki/ca.key")" = 600 ] || fail "ca.key not 0600"
[ "$(stat -c %a "$DIR/pki/kv1.svc.local.key")" = 600 ] || fail "node key not 0600"
"$CERTS" issue "$DIR/pki" kv1.svc.local >/dev/null 2>&1 && fail "issue overwrote a key without --force"
"$CERTS" issue "$DIR/pki" ../evil >/dev/null 2>&1 && fail "a path-like name was accepted"
"$CERTS" revoke "$DIR/pki" gone.svc.local >/dev/null

cat >"$DIR/policy" <<'EOF'
# certificate name   services it may register
kv1.svc.local        kv
kv1.svc.local        kv-*
*.svc.local          web
EOF

setpriv --pdeathsig KILL -- "$BSD" --listen 127.0.0.1:0 --ca "$DIR/pki/ca.crt" \
	--cert "$DIR/pki/bootstrap.svc.local.crt" \
	--key "$DIR/pki/bootstrap.svc.local.key" --crl "$DIR/pki/crl.pem" \
	--policy "$DIR/policy" --min-ttl-ms 200 >"$DIR/bsd.out" 2>"$DIR/bsd.log" &
BSD_PID=$!
wait_for "$DIR/bsd.out" '^listening '
PORT=$(awk '/^listening/ {print $3}' "$DIR/bsd.out")

reg() { # reg NODE ARGS...  (exec: in a background subshell, $! is the program itself)
	node=$1; shift
	exec setpriv --pdeathsig KILL -- "$REG" --ca "$DIR/pki/ca.crt" --cert "$DIR/pki/$node.crt" --key "$DIR/pki/$node.key" \
		--server 127.0.0.1:"$PORT" --server-name bootstrap.svc.local "$@"
}

(reg web.svc.local watch kv) >"$DIR/watch.out" 2>"$DIR/watch.log" &
WATCH_PID=$!
wait_for "$DIR/watch.out" '^watching service=kv'

(reg kv1.svc.local join kv 127.0.0.1:7000 --ttl-ms 2400 --meta zone=a --meta "note=two words") \
	>"$DIR/join.out" 2>"$DIR/join.log" &
JOIN_PID=$!
wait_for "$DIR/join.out" '^joined id='
ID=$(sed -n 's/^joined id=\([0-9]*\).*/\1/p' "$DIR/join.out")
wait_for "$DIR/watch.out" "^joined id=$ID service=kv endpoint=127.0.0.1:7000 owner=kv1.svc.local"

# still there after twice its lease (2.4 s: a 600 ms lease expired under a
# load of 15 in a trial, when a heartbeat came late): the join command heartbeats
sleep 5
(reg web.svc.local lookup kv) >"$DIR/lookup.out" || fail "lookup"
grep -q "^member id=$ID service=kv endpoint=127.0.0.1:7000 owner=kv1.svc.local ttl_ms=2400 .*meta.zone=a meta.note=two%20words$" \
	"$DIR/lookup.out" || fail "lookup output"
(reg web.svc.local list) >"$DIR/list.out" || fail "list"
[ "$(grep -c '^member ' "$DIR/list.out")" = 1 ] || fail "list count"

# the policy: web may not register kv
if (reg web.svc.local join kv 127.0.0.1:7001) >/dev/null 2>"$DIR/refused.log"; then
	fail "policy did not refuse"
fi
grep -q "may not register service kv" "$DIR/refused.log" || fail "refusal reason"

# a revoked certificate does not get in
if (reg gone.svc.local list) >/dev/null 2>"$DIR/revoked.log"; then
	fail "revoked certificate got in"
fi

# leaving: SIGTERM to the join command makes it leave, the watcher sees it
kill -TERM "$JOIN_PID" 2>/dev/null || fail "the join command exited before its SIGTERM (see join.log)"
wait "$JOIN_PID" || fail "join exit status"; JOIN_PID=
wait_for "$DIR/join.out" "^left id=$ID"
wait_for "$DIR/watch.out" "^left id=$ID"
(reg web.svc.local list) >"$DIR/list2.out" || fail "list after leave"
[ ! -s "$DIR/list2.out" ] || fail "member still listed"
grep -q "certificate revoked" "$DIR/bsd.log" || fail "no revocation log line in the daemon"

kill -TERM "$WATCH_PID"; wait "$WATCH_PID" || true; WATCH_PID=
kill -TERM "$BSD_PID"; wait "$BSD_PID" || fail "bootstrapd exit status"; BSD_PID=
echo "programs: ok"
