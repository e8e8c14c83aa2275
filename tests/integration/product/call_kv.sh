#!/bin/sh
# rdmx-call and the rdmx-kv client against a kv server over mutual TLS (its
# secure bootstrap endpoint, and through the registry with --registry
# --service): list, health, the kv methods by JSON (schema from the server's
# reflection, and from --proto), -v on both paths, statuses, bad input, and a
# refused client without TLS.
#   call_kv.sh RDMX_KV RDMX_CALL RDMX_CERTS KV_PROTO RDMX_BOOTSTRAPD
set -eu
KV=$1 CALL=$2 CERTS=$3 PROTO=$4 BSD=$5
. "$(dirname "$0")/../../support/lib.sh"
FAIL_TAIL=100000 # whole logs
test_init rdmx-call-kv
test_pki "$CERTS" kv.test.local client.test.local registry.test
start_bootstrapd "$BSD"
$DEATH "$KV" serve --listen 127.0.0.1:0 --ca "$P/ca.crt" --cert "$P/kv.test.local.crt" \
	--key "$P/kv.test.local.key" --registry "$REG" --registry-name registry.test \
	--service kv >"$DIR/kv.out" 2>"$DIR/kv.log" &
PID=$!
PIDS="$PIDS $PID"
wait_line "$DIR/kv.out" listening
wait_line "$DIR/kv.out" registered
ADDR=127.0.0.1:$(awk '/^listening/ {print $3; exit}' "$DIR/kv.out")
TLS="--ca $DIR/pki/ca.crt --cert $DIR/pki/client.test.local.crt --key $DIR/pki/client.test.local.key"

call() { # call ARGS... -> stdout in $DIR/out, stderr in $DIR/err, status in $st
	st=0
	# shellcheck disable=SC2086
	"$CALL" $TLS "$@" >"$DIR/out" 2>"$DIR/err" || st=$?
}
expect_out() { grep -q -- "$1" "$DIR/out" || fail "rdmx-call $2: no '$1' in: $(cat "$DIR/out" "$DIR/err")"; }
expect_err() { grep -q -- "$1" "$DIR/err" || fail "rdmx-call $2: no '$1' on stderr: $(cat "$DIR/err")"; }

# list: every service and method, the builtins included
call "$ADDR" list
[ $st -eq 0 ] || fail "list exit $st"
for s in '^kv.KV$' '^  kv.KV/Get$' '^  kv.KV/Put$' '^  kv.KV/Delete$' '^  kv.KV/Scan$' \
	'^rdmx.health.v1.Health$' '^  rdmx.health.v1.Health/Check$' \
	'^rdmx.reflection.v1.Reflection$' '^  rdmx.reflection.v1.Reflection/List$' \
	'^  rdmx.reflection.v1.Reflection/FileContaining$'; do
	expect_out "$s" list
done
call "$ADDR" list kv.KV
[ $st -eq 0 ] && [ "$(grep -c . "$DIR/out")" = 5 ] || fail "list kv.KV: $(cat "$DIR/out")"

# health
call "$ADDR" rdmx.health.v1.Health/Check '{}'
[ $st -eq 0 ] || fail "health exit $st"
expect_out '"status": "SERVING"' health
call "$ADDR" rdmx.health.v1.Health/Check '{"service": "kv.KV"}'
expect_out '"status": "SERVING"' "health kv.KV"
call "$ADDR" rdmx.health.v1.Health/Check '{"service": "no.Such"}'
[ $st -eq 69 ] || fail "health of an unknown service: exit $st, want 69 (64 + NOT_FOUND)"
expect_err 'Code: NOT_FOUND' "health no.Such"

# the kv methods by JSON, schema from the server (reflection)
call "$ADDR" kv.KV/Put '{"key": "user:1", "value": "YWxpY2U="}'
[ $st -eq 0 ] || fail "Put exit $st: $(cat "$DIR/err")"
[ "$(cat "$DIR/out")" = "{}" ] || fail "Put printed $(cat "$DIR/out")"
call "$ADDR" kv.KV/Put '{"key": "user:1", "value": "YWxpY2U="}'
expect_out '"replaced": true' "Put again"
call "$ADDR" kv.KV/Put '{"key": "user:2", "value": "Ym9i"}'
call "$ADDR" kv.KV/Get '{"key": "user:1"}'
expect_out '"value": "YWxpY2U="' Get
# the request on stdin, and the gRPC-style Service.Method spelling
echo '{"key": "user:2"}' >"$DIR/req.json"
st=0
# shellcheck disable=SC2086
"$CALL" $TLS "$ADDR" kv.KV.Get - <"$DIR/req.json" >"$DIR/out" 2>"$DIR/err" || st=$?
expect_out '"value": "Ym9i"' "Get from stdin"
call "$ADDR" kv.KV/Get @"$DIR/req.json"
expect_out '"value": "Ym9i"' "Get from @file"

# schema from --proto
call --proto "$PROTO" "$ADDR" kv.KV/Scan '{"prefix": "user:", "keysOnly": true}'
[ $st -eq 0 ] || fail "Scan exit $st: $(cat "$DIR/err")"
expect_out '"key": "user:1"' Scan
expect_out '"key": "user:2"' Scan
expect_out '"size": "5"' Scan
call --proto "$PROTO" "$ADDR" kv.KV/Scan '{"prefix": "user:", "limit": 1}'
expect_out '"nextPageToken": "user:1"' "Scan page 1"
call "$ADDR" kv.KV/Delete '{"key": "user:2"}'
expect_out '"deleted": true' Delete

# statuses and bad input
call "$ADDR" kv.KV/Get '{"key": "user:2"}'
[ $st -eq 69 ] || fail "Get of a deleted key: exit $st, want 69"
expect_err 'Code: NOT_FOUND' "Get user:2"
expect_err 'Message: no such key' "Get user:2"
call "$ADDR" kv.KV/Get '{"key": ""}'
[ $st -eq 67 ] || fail "Get of an empty key: exit $st, want 67 (INVALID_ARGUMENT)"
call "$ADDR" kv.KV/Get '{"key": 5}'
[ $st -eq 1 ] || fail "a bad request was sent (exit $st)"
expect_err 'key: expected a string' "bad field type"
call "$ADDR" kv.KV/Get '{"key": "a"'
[ $st -eq 1 ] || fail "bad JSON: exit $st"
expect_err 'request JSON' "bad JSON"
call "$ADDR" kv.KV/Nope '{}'
[ $st -eq 1 ] || fail "unknown method: exit $st"
call "$ADDR" no.Such/Method '{}'
[ $st -eq 1 ] || fail "unknown service: exit $st"
expect_err 'give --proto' "unknown service"

# -v, at ADDR and through the registry (--service): the blocks on stdout, and
# one line with the device, status and latency of the method called on stderr
# verbose_ok METHOD WHERE RESPONSES: what -v printed for a call that ended OK
verbose_ok() {
	for b in 'Request metadata to send:' 'Response headers received:' \
		'Response trailers received:' "Sent 1 request and received $3 response"; do
		expect_out "^$b\$" "-v $2"
	done
	[ "$3" = 0 ] || expect_out '^Response contents:$' "-v $2"
	[ "$(grep -c "^rdmx-call: $1: OK on device tcp, [0-9.]* us" "$DIR/err")" = 1 ] ||
		fail "rdmx-call -v $2: not one line with the device, status and latency: $(cat "$DIR/err")"
}
call -v "$ADDR" kv.KV/Get '{"key": "user:1"}'
[ $st -eq 0 ] || fail "Get -v exit $st: $(cat "$DIR/err")"
expect_out '"value": "YWxpY2U="' "Get -v"
verbose_ok kv.KV/Get ADDR 1
call -v --registry "$REG" --service kv kv.KV/Get '{"key": "user:1"}'
[ $st -eq 0 ] || fail "Get -v --service exit $st: $(cat "$DIR/err")"
expect_out '"value": "YWxpY2U="' "Get -v --service"
verbose_ok kv.KV/Get --service 1
expect_err '^rdmx-call: kv.KV/Get: OK on device tcp, .* us, [0-9]* bytes sent, [0-9]* received, 0 retries$' \
	"-v --service"
call -v --registry "$REG" --service kv kv.KV/Get '{"key": "user:2"}'
[ $st -eq 69 ] || fail "Get -v --service of a deleted key: exit $st, want 69"
expect_out '^Sent 1 request and received 0 responses$' "-v --service NOT_FOUND"
expect_out '^Response trailers received:$' "-v --service NOT_FOUND"
[ "$(grep -c "^rdmx-call: kv.KV/Get: NOT_FOUND on device tcp, [0-9.]* us" "$DIR/err")" = 1 ] ||
	fail "rdmx-call -v --service: not one NOT_FOUND line: $(cat "$DIR/err")"

# the same server through the rdmx-kv client (--server: no registry)
KVC="$KV --server $ADDR $TLS"
# shellcheck disable=SC2086
[ "$($KVC put greeting 'hello, rdma')" = OK ] || fail "rdmx-kv put"
# shellcheck disable=SC2086
[ "$($KVC get greeting)" = "hello, rdma" ] || fail "rdmx-kv get"
head -c 3000000 /dev/urandom >"$DIR/big"
# shellcheck disable=SC2086
$KVC put big --file "$DIR/big" >/dev/null || fail "rdmx-kv put --file"
# shellcheck disable=SC2086
$KVC get big --out "$DIR/big.back" || fail "rdmx-kv get --out"
cmp -s "$DIR/big" "$DIR/big.back" || fail "a 3 MB value came back different"
# shellcheck disable=SC2086
[ "$($KVC scan user:)" = "user:1 alice" ] || fail "rdmx-kv scan: $($KVC scan user:)"
# shellcheck disable=SC2086
[ "$($KVC del greeting)" = deleted ] || fail "rdmx-kv del"
# shellcheck disable=SC2086
if $KVC get greeting >/dev/null 2>"$DIR/err"; then fail "get of a deleted key succeeded"; fi
expect_err 'not found' "rdmx-kv get greeting"

# no TLS: the secure endpoint does not talk to a plain client
st=0
"$CALL" --timeout-ms 3000 "$ADDR" list >"$DIR/out" 2>"$DIR/err" || st=$?
[ $st -eq 1 ] || fail "a client without TLS got an answer (exit $st)"

kill -TERM "$PID"
st=0
wait "$PID" || st=$?
PID=
[ $st -eq 0 ] || fail "the kv server exited with $st"
grep -q 'stopped' "$DIR/kv.log" || fail "no stop line"
echo "call_kv: ok"
