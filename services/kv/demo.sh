#!/usr/bin/env bash
# The kv part of scripts/demo:  services/kv/demo.sh BUILD_DIR
#
# Makes a cluster CA and certificates on the first run (kept in
# BUILD_DIR/demo/pki, or $RDMX_DEMO_DIR/pki), starts rdmx-bootstrapd and a kv
# server on the default device (RDMX_DEVICE overrides), runs a scripted client
# session over one connection (puts, gets, a scan, a large value, a delete)
# printing each call with its latency, checks a few values again with the
# one-shot commands and rdmx-call, then stops everything. The large value is
# 64 MiB, or the most the device's messages carry (Soft-RoCE: 8 MiB);
# RDMX_DEMO_BIG=SIZE overrides. RDMX_DEMO_WORKERS=N serves from N worker
# threads (rdmx-kv serve --workers N) and checks at the stop that every
# worker was dealt connections.
# Exit status 0 only when every value read back is right and both servers
# stopped cleanly. Loopback only; every wait is bounded.
set -euo pipefail

# services/kv/demo.sh --installed BINDIR runs the same session with the
# installed programs of BINDIR (a package install: /usr/bin); the state then
# goes to $RDMX_DEMO_DIR, else a scratch folder removed at the end.
if [ $# -eq 2 ] && [ "$1" = --installed ] && [ -d "$2" ]; then
	BIN=$(cd "$2" && pwd)
	KV=$BIN/rdmx-kv BSD=$BIN/rdmx-bootstrapd CERTS=$BIN/rdmx-certs CALL=$BIN/rdmx-call
	STATE=${RDMX_DEMO_DIR:-}
elif [ $# -eq 1 ] && [ -d "$1" ]; then
	BUILD=$(cd "$1" && pwd)
	KV=$BUILD/services/kv/rdmx-kv
	BSD=$BUILD/services/bootstrapd/rdmx-bootstrapd
	CERTS=$BUILD/tools/rdmx-certs/rdmx-certs
	CALL=$BUILD/tools/rdmx-call/rdmx-call
	STATE=${RDMX_DEMO_DIR:-$BUILD/demo}
else
	echo "usage: services/kv/demo.sh BUILD_DIR | --installed BINDIR" >&2
	exit 2
fi
for p in "$KV" "$BSD" "$CERTS" "$CALL"; do
	[ -x "$p" ] || { echo "demo: $p is missing (build or install first)" >&2; exit 1; }
done
BIG=${RDMX_DEMO_BIG:-}
WORKERS=${RDMX_DEMO_WORKERS:-}
SERVE_EXTRA=()
[ -z "$WORKERS" ] || SERVE_EXTRA=(--workers "$WORKERS")
RUN=$(mktemp -d /tmp/rdmx-kv-demo-XXXXXX)
[ -n "$STATE" ] || STATE=$RUN/state
PKI=$STATE/pki
BSD_PID= KV_PID=

say() { echo "demo: $*"; }

# stop PID NAME: SIGTERM, a bounded wait, SIGKILL as a last resort; the
# exit status of the process (137 when it had to be killed)
stop() {
	local pid=$1 i=0
	kill -TERM "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$pid" 2>/dev/null; then
		echo "demo: $2 did not stop within 10 s, killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	local rc=0
	wait "$pid" 2>/dev/null || rc=$?
	return $rc
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -n "$KV_PID" ] && stop "$KV_PID" "the kv server" >/dev/null 2>&1 || true
	[ -n "$BSD_PID" ] && stop "$BSD_PID" rdmx-bootstrapd >/dev/null 2>&1 || true
	if [ $rc -ne 0 ]; then
		for f in "$RUN"/*.log; do
			[ -s "$f" ] && sed "s|^|  $(basename "$f" .log): |" "$f" >&2
		done
	fi
	rm -rf "$RUN"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "demo: FAILED: $*" >&2; exit 1; }

# wait_for FILE PATTERN WHAT: bounded (20 s), a progress line each 2 s
wait_for() {
	local i=0
	until grep -q "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 200 ] && fail "no '$2' from $3 within 20 s"
		[ $((i % 20)) -eq 0 ] && say "  still waiting for $3 ($((i / 10)) s)..."
		sleep 0.1
	done
}

# ---- certificates: a cluster CA and one certificate per program ----
if [ -f "$PKI/ca.crt" ] && [ -f "$PKI/client.demo.local.crt" ]; then
	say "certificates in $PKI (made on an earlier run)"
else
	say "first run: making a cluster CA and certificates in $PKI..."
	rm -rf "$PKI"
	mkdir -p "$STATE"
	"$CERTS" init "$PKI" >/dev/null
	for n in bootstrap.demo.local kv.demo.local client.demo.local; do
		"$CERTS" issue "$PKI" $n >/dev/null
	done
fi
TLS_CLIENT=(--ca "$PKI/ca.crt" --cert "$PKI/client.demo.local.crt" --key "$PKI/client.demo.local.key")

# ---- rdmx-bootstrapd: the cluster registry ----
say "starting rdmx-bootstrapd (the cluster registry, mutual TLS)..."
setpriv --pdeathsig KILL -- "$BSD" --listen 127.0.0.1:0 --ca "$PKI/ca.crt" \
	--cert "$PKI/bootstrap.demo.local.crt" \
	--key "$PKI/bootstrap.demo.local.key" --crl "$PKI/crl.pem" \
	>"$RUN/bsd.out" 2>"$RUN/bootstrapd.log" &
BSD_PID=$!
wait_for "$RUN/bsd.out" '^listening ' rdmx-bootstrapd
REG=127.0.0.1:$(awk '/^listening/ {print $3; exit}' "$RUN/bsd.out")
say "rdmx-bootstrapd listening on $REG"

# ---- the kv server ----
say "starting the kv server (it registers as service kv)..."
setpriv --pdeathsig KILL -- "$KV" serve --listen 127.0.0.1:0 --registry "$REG" \
	--registry-name bootstrap.demo.local \
	--ca "$PKI/ca.crt" --cert "$PKI/kv.demo.local.crt" --key "$PKI/kv.demo.local.key" \
	--crl "$PKI/crl.pem" ${SERVE_EXTRA[@]+"${SERVE_EXTRA[@]}"} >"$RUN/kv.out" 2>"$RUN/kv.log" &
KV_PID=$!
wait_for "$RUN/kv.out" '^registered ' "the kv server"
KV_ADDR=$(sed -n 's/^registered .*endpoint=\([^ ]*\).*/\1/p' "$RUN/kv.out")
DEVICE=$(sed -n 's/.*(device \([^,]*\),.*/\1/p' "$RUN/kv.log" | head -n 1)
LIMIT=$(sed -n 's/.*values up to \([0-9]*\) MiB.*/\1/p' "$RUN/kv.log" | head -n 1)
say "kv server at $KV_ADDR on device ${DEVICE:-?}, registered with rdmx-bootstrapd"
# the large value: 64 MiB, or the most the device's messages carry (Soft-RoCE: 8 MiB)
[ -n "$BIG" ] || BIG=${LIMIT:-64}M

KVC=("$KV" --registry "$REG" --registry-name bootstrap.demo.local "${TLS_CLIENT[@]}")

# ---- the scripted session: one connection, each call with its latency ----
say "client session (found through rdmx-bootstrapd; each call with its latency):"
"${KVC[@]}" session - <<SESSION || fail "the client session"
put user:1 alice
put user:2 bob
put user:3 "carol and dave"
get user:1 = alice
get user:2 = bob
get user:3 = "carol and dave"
scan user: = 3
put blob --random $BIG
get blob = --random $BIG
del user:2
get user:2 = --missing
scan user: = 2
SESSION

# ---- the one-shot commands, as a user types them ----
say "one-shot commands (a new connection each):"
got=$("${KVC[@]}" get user:1) || fail "rdmx-kv get user:1"
[ "$got" = alice ] || fail "rdmx-kv get user:1 printed '$got', expected 'alice'"
echo "  \$ rdmx-kv get user:1"
echo "  $got"
"${KVC[@]}" put greeting "hello, rdma" >/dev/null || fail "rdmx-kv put greeting"
got=$("${KVC[@]}" get greeting) || fail "rdmx-kv get greeting"
[ "$got" = "hello, rdma" ] || fail "rdmx-kv get greeting printed '$got'"
echo "  \$ rdmx-kv put greeting 'hello, rdma' && rdmx-kv get greeting"
echo "  $got"
echo "  \$ rdmx-kv scan user:"
"${KVC[@]}" scan user: >"$RUN/scan.txt" || fail "rdmx-kv scan user:"
sed 's/^/  /' "$RUN/scan.txt"
[ "$(cat "$RUN/scan.txt")" = "$(printf 'user:1 alice\nuser:3 carol and dave')" ] ||
	fail "rdmx-kv scan user: printed something else"

# ---- rdmx-call: health check and reflection on the same server ----
say "rdmx-call against the kv server (health check, then a Get by JSON):"
health=$("$CALL" "${TLS_CLIENT[@]}" "$KV_ADDR" rdmx.health.v1.Health/Check '{}') ||
	fail "rdmx-call health check"
echo "  \$ rdmx-call ... $KV_ADDR rdmx.health.v1.Health/Check '{}'"
echo "$health" | sed 's/^/  /'
echo "$health" | grep -q '"status": "SERVING"' || fail "the health check did not say SERVING"
reply=$("$CALL" "${TLS_CLIENT[@]}" "$KV_ADDR" kv.KV/Get '{"key": "user:1"}') ||
	fail "rdmx-call kv.KV/Get"
echo "  \$ rdmx-call ... $KV_ADDR kv.KV/Get '{\"key\": \"user:1\"}'"
echo "$reply" | sed 's/^/  /'
# bytes travel as base64 in JSON: "alice" is YWxpY2U=
echo "$reply" | grep -q '"value": "YWxpY2U="' || fail "rdmx-call kv.KV/Get returned something else"

# ---- clean shutdown ----
say "stopping the kv server and rdmx-bootstrapd..."
rc=0
stop "$KV_PID" "the kv server" || rc=$?
KV_PID=
[ $rc -eq 0 ] || fail "the kv server exited with status $rc"
grep -q 'stopped' "$RUN/kv.log" || fail "the kv server did not report its stop"
sed -n 's/^rdmx-kv: \(stopped.*\)/  kv server \1/p' "$RUN/kv.log"
if [ -n "$WORKERS" ]; then
	sed -n 's/^rdmx-kv: \(worker [0-9]*: .*\)/  kv server \1/p' "$RUN/kv.log"
	for ((w = 0; w < WORKERS; w++)); do
		n=$(sed -n "s/^rdmx-kv: worker $w: \([0-9]*\) connections.*/\1/p" "$RUN/kv.log")
		[ -n "$n" ] && [ "$n" -gt 0 ] || fail "worker $w of $WORKERS was dealt no connection"
	done
fi
stop "$BSD_PID" rdmx-bootstrapd || rc=$?
BSD_PID=
[ $rc -eq 0 ] || fail "rdmx-bootstrapd exited with status $rc"
say "kv session ok: every value read back is right, both servers stopped cleanly"
