#!/bin/sh
# rdmx-call against the hello example's plain rdmx listener: list and health
# (served by every rdmx_rpc_server), SayHello by JSON with --proto and with
# the schema from the server's reflection service.
#   call_hello.sh HELLO_SERVER RDMX_CALL HELLO_PROTO PORT
set -eu
SERVER=$1 CALL=$2 PROTO=$3 PORT=$4
. "$(dirname "$0")/../../support/lib.sh"
FAIL_ALL=1 FAIL_TAIL=100000 # every file, whole
test_init rdmx-call-hello
$DEATH "$SERVER" -p "$PORT" >"$DIR/server.log" 2>&1 &
PID=$!
PIDS="$PIDS $PID"
wait_for "$DIR/server.log" listening
ADDR=127.0.0.1:$PORT

"$CALL" "$ADDR" list >"$DIR/list.out" 2>"$DIR/list.err" || fail "list"
grep -q '^hello.Greeter$' "$DIR/list.out" || fail "list: no hello.Greeter"
grep -q '^  hello.Greeter/SayHello$' "$DIR/list.out" || fail "list: no SayHello"
grep -q '^  rdmx.health.v1.Health/Check$' "$DIR/list.out" || fail "list: no health check"

"$CALL" "$ADDR" rdmx.health.v1.Health/Check '{}' >"$DIR/health.out" 2>"$DIR/health.err" ||
	fail "health"
grep -q '"status": "SERVING"' "$DIR/health.out" || fail "health: not SERVING"
"$CALL" "$ADDR" rdmx.health.v1.Health/Check '{"service": "hello.Greeter"}' \
	>"$DIR/health2.out" 2>"$DIR/health2.err" || fail "health of hello.Greeter"

"$CALL" --proto "$PROTO" "$ADDR" hello.Greeter/SayHello '{"name": "rdmx"}' \
	>"$DIR/say.out" 2>"$DIR/say.err" || fail "SayHello"
grep -q '"message": "Hello, rdmx!"' "$DIR/say.out" || fail "SayHello: wrong message"
grep -q '"count": 1' "$DIR/say.out" || fail "SayHello: wrong count"
"$CALL" --proto "$PROTO" "$ADDR" hello.Greeter/SayHello '{"name": "again"}' \
	>"$DIR/say2.out" 2>"$DIR/say2.err" || fail "SayHello again"
grep -q '"count": 2' "$DIR/say2.out" || fail "SayHello again: wrong count"

# without --proto the schema comes from the server's reflection service: the
# generated hello_Greeter_register gave it hello.proto
"$CALL" "$ADDR" hello.Greeter/SayHello '{"name": "r"}' >"$DIR/refl.out" 2>"$DIR/refl.err" ||
	fail "SayHello without --proto"
grep -q '"message": "Hello, r!"' "$DIR/refl.out" || fail "SayHello via reflection"
grep -q '"count": 3' "$DIR/refl.out" || fail "SayHello via reflection: wrong count"

kill -TERM "$PID"
wait "$PID" 2>/dev/null || true
PID=
echo "call_hello: ok"
