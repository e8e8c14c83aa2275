#!/bin/sh
# /metrics of rdmx-kv serve and rdmx-bootstrapd, read by a real client
# (curl) and checked by Prometheus' promtool when it is installed; and the
# progress meter of a large rdmx-kv put/get (none off a terminal, one on it).
#   metrics.sh RDMX_KV RDMX_BOOTSTRAPD RDMX_CERTS
set -eu
KV=$1 BSD=$2 CERTS=$3
. "$(dirname "$0")/../../support/lib.sh"
FAIL_TAIL=100000 # whole logs
test_init rdmx-metrics
command -v curl >/dev/null || fail "curl is needed (Debian: curl)"
test_pki "$CERTS" kv.test registry.test client.test
CA=$P/ca.crt

$DEATH "$KV" serve --listen 127.0.0.1:0 --metrics=127.0.0.1:0 --ca "$CA" \
	--cert "$DIR/pki/kv.test.crt" --key "$DIR/pki/kv.test.key" >"$DIR/kv.out" 2>"$DIR/kv.log" &
PIDS="$PIDS $!"
wait_line "$DIR/kv.out" metrics
KADDR=127.0.0.1:$(awk '/^listening/ {print $3; exit}' "$DIR/kv.out")
MURL=http://127.0.0.1:$(awk '/^metrics/ {print $3; exit}' "$DIR/kv.out")/metrics
KVC="$KV --server $KADDR --ca $CA --cert $DIR/pki/client.test.crt --key $DIR/pki/client.test.key"

for k in a b c; do $KVC put "$k" "value-$k" >/dev/null || fail "put $k"; done
$KVC get nosuchkey >/dev/null 2>&1 && fail "get of a missing key succeeded"

# progress: 2 MiB off a terminal -> no meter; on one (script) -> a meter
head -c 2097152 /dev/urandom >"$DIR/big"
$KVC put big --file "$DIR/big" >/dev/null 2>"$DIR/put.err" || fail "put big"
grep -q "put:" "$DIR/put.err" && fail "a progress meter off a terminal: $(cat "$DIR/put.err")"
$KVC get big --out "$DIR/big.back" 2>"$DIR/get.err" || fail "get big"
cmp -s "$DIR/big" "$DIR/big.back" || fail "get big: wrong bytes"
grep -q "get:" "$DIR/get.err" && fail "a progress meter off a terminal: $(cat "$DIR/get.err")"
if command -v script >/dev/null; then
	script -qc "$KVC put big2 --file $DIR/big" /dev/null </dev/null >"$DIR/tty.out" 2>&1 ||
		fail "put under script"
	grep -q "put: 2.0 MiB / 2.0 MiB" "$DIR/tty.out" || fail "no meter on a terminal: $(cat "$DIR/tty.out")"
	script -qc "$KVC --quiet put big3 --file $DIR/big" /dev/null </dev/null >"$DIR/ttyq.out" 2>&1 ||
		fail "put --quiet under script"
	grep -q "put:" "$DIR/ttyq.out" && fail "--quiet still draws: $(cat "$DIR/ttyq.out")"
else
	echo "SKIP (loud): script(1) missing: the terminal path of the meter is not checked"
fi

curl -sS -D "$DIR/headers" -o "$DIR/metrics" "$MURL" || fail "curl $MURL"
tr -d '\r' <"$DIR/headers" | grep -qx 'Content-Type: text/plain; version=0.0.4; charset=utf-8' ||
	fail "Content-Type: $(cat "$DIR/headers")"
m=$DIR/metrics
want() { grep -qxF -- "$1" "$m" || fail "no line '$1' in /metrics"; }
want '# TYPE rdmx_rpc_server_handled_total counter'
want '# TYPE rdmx_rpc_server_handling_seconds histogram'
want 'rdmx_rpc_server_handled_total{method="kv.KV/Put",code="OK"} 6'
want 'rdmx_rpc_server_handled_total{method="kv.KV/Get",code="NOT_FOUND"} 1'
want 'rdmx_rpc_server_handled_total{method="kv.KV/Get",code="OK"} 1'
want 'rdmx_rpc_server_started_total{method="kv.KV/Put"} 6'
want 'rdmx_rpc_server_handling_seconds_count{method="kv.KV/Put"} 6'
want 'rdmx_rpc_server_handling_seconds_bucket{method="kv.KV/Put",le="+Inf"} 6'
want 'rdmx_rpc_server_clients 0'
grep -q '^# HELP rdmx_channel_messages_received_total ' "$m" || fail "no channel counters"
recv=$(awk '$1 == "rdmx_channel_received_bytes_total" {print $2}' "$m")
[ -n "$recv" ] && [ "$recv" -ge 4194304 ] || fail "channel bytes received $recv < 4 MiB"
# the engine counters of the server's context: the big put came by one RDMA
# read of 2 MiB, each of the (at least 6) answers went as a write-with-
# immediate, each client connected (a client that leaves right after its
# answer may fail the write's acknowledgement: completions are not checked)
want '# TYPE rdmx_engine_tasks_submitted_total counter'
want '# TYPE rdmx_engine_bytes_total counter'
eng() { awk -v k="$1" '$1 == k {print $2}' "$m"; }
v=$(eng 'rdmx_engine_bytes_total{op="read"}')
[ -n "$v" ] && [ "$v" -ge 2097152 ] || fail "engine read bytes '$v' < 2 MiB"
v=$(eng 'rdmx_engine_tasks_submitted_total{op="write_imm"}')
[ -n "$v" ] && [ "$v" -ge 6 ] || fail "engine write_imm submitted '$v' < 6 answers"
v=$(eng 'rdmx_engine_tasks_completed_total{op="receive"}')
[ -n "$v" ] && [ "$v" -ge 6 ] || fail "engine receives completed '$v' < 6 requests"
v=$(eng 'rdmx_engine_tasks_failed_total{op="read"}')
[ "$v" = 0 ] || fail "engine failed reads '$v'"
v=$(eng rdmx_engine_connections_established_total)
[ -n "$v" ] && [ "$v" -ge 4 ] || fail "engine connections established '$v' < 4"
# the TLS listener: the 8 clients' handshakes above, then a peer that
# speaks no TLS (a scanner) is refused and counted
want 'rdmx_tls_listener_refused_total 0'
v=$(eng rdmx_tls_listener_established_total)
[ "$v" = 8 ] || fail "TLS handshakes established '$v', not the 8 clients'"
curl -s -o /dev/null "http://$KADDR/" && fail "plain HTTP to the TLS listener was answered"
curl -sS -o "$m" "$MURL" || fail "curl $MURL"
want 'rdmx_tls_listener_refused_total 1'
code=$(curl -s -o /dev/null -w '%{http_code}' "${MURL%/metrics}/other")
[ "$code" = 404 ] || fail "GET /other answered $code"

# --workers 2: the engine counters are every worker's context's, summed.
# The 4 clients are dealt to the 2 workers in turn (2 each): 4 engine
# connections only if both workers' contexts count; each request received
# and each answer sent was counted by its worker before the client had it.
$DEATH "$KV" serve --listen 127.0.0.1:0 --metrics=127.0.0.1:0 --workers 2 --ca "$CA" \
	--cert "$DIR/pki/kv.test.crt" --key "$DIR/pki/kv.test.key" >"$DIR/kvw.out" 2>"$DIR/kvw.log" &
PIDS="$PIDS $!"
wait_line "$DIR/kvw.out" metrics
WADDR=127.0.0.1:$(awk '/^listening/ {print $3; exit}' "$DIR/kvw.out")
WURL=http://127.0.0.1:$(awk '/^metrics/ {print $3; exit}' "$DIR/kvw.out")/metrics
KVW="$KV --server $WADDR --ca $CA --cert $DIR/pki/client.test.crt --key $DIR/pki/client.test.key"
for k in a b c d; do $KVW put "$k" "value-$k" >/dev/null || fail "put $k (--workers 2)"; done
curl -sS -o "$DIR/wmetrics" "$WURL" || fail "curl $WURL"
m=$DIR/wmetrics
want 'rdmx_rpc_server_handled_total{method="kv.KV/Put",code="OK"} 4'
want '# TYPE rdmx_engine_tasks_submitted_total counter'
want '# TYPE rdmx_engine_connections_established_total counter'
v=$(eng rdmx_engine_connections_established_total)
[ "$v" = 4 ] || fail "--workers 2: engine connections established '$v', not the 4 clients'"
v=$(eng 'rdmx_engine_tasks_completed_total{op="receive"}')
[ -n "$v" ] && [ "$v" -ge 4 ] || fail "--workers 2: engine receives completed '$v' < 4 requests"
v=$(eng 'rdmx_engine_tasks_submitted_total{op="write_imm"}')
[ -n "$v" ] && [ "$v" -ge 4 ] || fail "--workers 2: engine write_imm submitted '$v' < 4 answers"
grep -q 'did not answer' "$DIR/kvw.log" && fail "--workers 2: a worker did not answer"
m=$DIR/metrics

$DEATH "$BSD" --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --ca "$CA" \
	--cert "$DIR/pki/registry.test.crt" --key "$DIR/pki/registry.test.key" \
	>"$DIR/bsd.out" 2>"$DIR/bsd.log" &
PIDS="$PIDS $!"
wait_line "$DIR/bsd.out" metrics
BURL=http://127.0.0.1:$(awk '/^metrics/ {print $3; exit}' "$DIR/bsd.out")/metrics
curl -sS -o "$DIR/bmetrics" "$BURL" || fail "curl $BURL"
grep -qx 'rdmx_registry_members 0' "$DIR/bmetrics" || fail "bootstrapd: no rdmx_registry_members 0"
grep -q '^rdmx_tls_listener_accepted_total ' "$DIR/bmetrics" || fail "bootstrapd: no listener counters"

if command -v promtool >/dev/null; then
	promtool check metrics <"$m" || fail "promtool check metrics (rdmx-kv)"
	promtool check metrics <"$DIR/wmetrics" || fail "promtool check metrics (rdmx-kv --workers 2)"
	promtool check metrics <"$DIR/bmetrics" || fail "promtool check metrics (rdmx-bootstrapd)"
	echo "ok: promtool check metrics"
else
	echo "SKIP (loud): promtool missing (Debian: prometheus): the exposition is not linted"
fi
echo "ok: /metrics of rdmx-kv serve and rdmx-bootstrapd"
