#!/bin/sh
# rdmx-call against the route_guide example server (examples/route_guide/):
# unary, server-, client- and bidi-streaming calls with the schema from
# reflection, -d and -d @ (a sequence of JSON requests), -H seen by the
# server (it echoes x-* headers as response headers and trailers), -v's
# header and trailer blocks, describe, -max-time, single-dash long options,
# and -d no longer naming the device.
#   callstream.sh ROUTE_GUIDE_SERVER RDMX_CALL PORT
set -eu
SERVER=$1 CALL=$2 PORT=$3
. "$(dirname "$0")/../../support/lib.sh"
FAIL_ALL=1 FAIL_TAIL=100000 # every file, whole
test_init rdmx-call-stream
$DEATH "$SERVER" -p "$PORT" >"$DIR/server.log" 2>&1 &
PIDS="$PIDS $!"
wait_for "$DIR/server.log" listening
ADDR=127.0.0.1:$PORT
RG=routeguide.RouteGuide
P11='{"latitude": 401000000, "longitude": -739000000}'

# unary, -d DATA, single-dash -plaintext
"$CALL" -plaintext -d "$P11" "$ADDR" $RG/GetFeature >"$DIR/get.out" 2>"$DIR/get.err" ||
	fail "GetFeature"
grep -q '"name": "feature 1,1"' "$DIR/get.out" || fail "GetFeature: wrong feature"

# server-streaming: every feature of the rectangle, one JSON object each
"$CALL" -d '{"lo": {"latitude": 400000000, "longitude": -740000000}, "hi": {"latitude": 409000000, "longitude": -731000000}}' \
	"$ADDR" $RG/ListFeatures >"$DIR/list.out" 2>"$DIR/list.err" || fail "ListFeatures"
n=$(grep -c '"name": "feature ' "$DIR/list.out" || true)
[ "$n" -eq 66 ] || fail "ListFeatures: $n features, want 66"

# client-streaming from stdin (-d @): the points of a route, one summary
printf '%s\n' '{"latitude": 410000000, "longitude": -730000000}' \
	'{"latitude": 410000000, "longitude": -729000000}' \
	'{"latitude": 411000000, "longitude": -729000000}' >"$DIR/route.json"
"$CALL" -d @ "$ADDR" $RG/RecordRoute <"$DIR/route.json" >"$DIR/rec.out" 2>"$DIR/rec.err" ||
	fail "RecordRoute"
grep -q '"pointCount": 3' "$DIR/rec.out" || fail "RecordRoute: not 3 points"
grep -q '"distance": 2000' "$DIR/rec.out" || fail "RecordRoute: distance"
# several messages in one -d argument, no blanks between them
"$CALL" -d '{"latitude": 1}{"latitude": 2}' "$ADDR" $RG/RecordRoute >"$DIR/rec2.out" \
	2>"$DIR/rec2.err" || fail "RecordRoute with -d"
grep -q '"pointCount": 2' "$DIR/rec2.out" || fail "RecordRoute -d: not 2 points"
# no request at all: an empty stream
"$CALL" -d '' "$ADDR" $RG/RecordRoute >"$DIR/rec0.out" 2>"$DIR/rec0.err" ||
	fail "RecordRoute without requests"
grep -q '"pointCount"' "$DIR/rec0.out" && fail "RecordRoute of nothing counted points"

# bidi: six notes at three points; the last three bring back the first three
for k in 1 2 3 4 5 6; do
	printf '{"location": {"latitude": 400000000, "longitude": %d}, "message": "note %d"}\n' \
		$((-740000000 + (k % 3 + 1) * 1000000)) $k
done >"$DIR/notes.json"
"$CALL" -d @ "$ADDR" $RG/RouteChat <"$DIR/notes.json" >"$DIR/chat.out" 2>"$DIR/chat.err" ||
	fail "RouteChat"
[ "$(grep -c '"message"' "$DIR/chat.out")" -eq 3 ] || fail "RouteChat: not 3 notes back"
grep -q '"message": "note 1"' "$DIR/chat.out" || fail "RouteChat: note 1 not back"

# -H reaches the server (echoed), -v prints headers and trailers
"$CALL" -v -H 'X-Request-Id: 42' -H 'x-trace: abc' -d "$P11" "$ADDR" $RG/GetFeature \
	>"$DIR/v.out" 2>"$DIR/v.err" || fail "GetFeature -v"
grep -q '^Request metadata to send:$' "$DIR/v.out" || fail "-v: no request metadata block"
grep -q '^Response headers received:$' "$DIR/v.out" || fail "-v: no headers block"
grep -q '^Response trailers received:$' "$DIR/v.out" || fail "-v: no trailers block"
sed -n '/^Response headers received:$/,/^$/p' "$DIR/v.out" >"$DIR/v.headers"
sed -n '/^Response trailers received:$/,/^$/p' "$DIR/v.out" >"$DIR/v.trailers"
grep -q '^x-request-id: 42$' "$DIR/v.headers" || fail "-H x-request-id not echoed in headers"
grep -q '^x-trace: abc$' "$DIR/v.headers" || fail "-H x-trace not echoed in headers"
grep -q '^x-request-id: 42$' "$DIR/v.trailers" || fail "-H not echoed in trailers"
grep -q '^served-by: route_guide_server$' "$DIR/v.trailers" || fail "-v: no served-by trailer"
grep -q '"name": "feature 1,1"' "$DIR/v.out" || fail "-v: no response"
grep -q '^Response contents:$' "$DIR/v.out" || fail "-v: no 'Response contents:'"
grep -q '^Sent 1 request and received 1 response$' "$DIR/v.out" || fail "-v: no counts"
# -v: the device, status and latency of the method called on stderr, once
[ "$(grep -c "^rdmx-call: $RG/GetFeature: OK on device tcp, [0-9.]* us" "$DIR/v.err")" = 1 ] ||
	fail "-v: not one line with the device, status and latency of GetFeature"
# and on a stream
"$CALL" -v -H 'x-stream: yes' -d @ "$ADDR" $RG/RouteChat <"$DIR/notes.json" \
	>"$DIR/vs.out" 2>"$DIR/vs.err" || fail "RouteChat -v"
sed -n '/^Response headers received:$/,/^$/p' "$DIR/vs.out" | grep -q '^x-stream: yes$' ||
	fail "stream: -H not echoed in headers"
sed -n '/^Response trailers received:$/,/^$/p' "$DIR/vs.out" | grep -q '^served-by: route_guide_server$' ||
	fail "stream: no trailers"
grep -q '^Sent 6 requests and received 3 responses$' "$DIR/vs.out" || fail "stream: -v counts"
[ "$(grep -c "^rdmx-call: $RG/RouteChat: OK on device tcp, [0-9.]* us" "$DIR/vs.err")" = 1 ] ||
	fail "stream: -v: not one line with the device, status and latency of RouteChat"
# a bad header is a usage error
set +e
"$CALL" -H 'no colon' "$ADDR" $RG/GetFeature >/dev/null 2>"$DIR/badh.err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "-H without a colon: exit $rc, want 2"

# describe a service and a method (reflection)
"$CALL" "$ADDR" describe $RG >"$DIR/desc.out" 2>"$DIR/desc.err" || fail "describe service"
grep -q "^$RG is a service:$" "$DIR/desc.out" || fail "describe: header line"
grep -q '^  rpc ListFeatures ( .routeguide.Rectangle ) returns ( stream .routeguide.Feature );$' \
	"$DIR/desc.out" || fail "describe: ListFeatures"
grep -q '^  rpc RouteChat ( stream .routeguide.RouteNote ) returns ( stream .routeguide.RouteNote );$' \
	"$DIR/desc.out" || fail "describe: RouteChat"
"$CALL" "$ADDR" describe $RG.RecordRoute >"$DIR/descm.out" 2>"$DIR/descm.err" ||
	fail "describe method"
grep -q "^$RG.RecordRoute is a method:$" "$DIR/descm.out" || fail "describe method: header"
grep -q '^rpc RecordRoute ( stream .routeguide.Point ) returns ( .routeguide.RouteSummary );$' \
	"$DIR/descm.out" || fail "describe method: rpc line"
set +e
"$CALL" "$ADDR" describe $RG.Nope >/dev/null 2>"$DIR/descx.err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "describe of an unknown method: exit $rc"

# -max-time: a chat whose input never ends ends DEADLINE_EXCEEDED (exit 68);
# both spellings, --opt=value and --opt value
mkfifo "$DIR/never"
for form in "-max-time 0.5" "--max-time=0.5" "-max-time=0.5" "--max-time 0.5"; do
	# the writer holds the fifo open (no data) until the call is over
	sleep 60 >"$DIR/never" &
	wpid=$!
	set +e
	# shellcheck disable=SC2086
	"$CALL" $form -d @ "$ADDR" $RG/RouteChat <"$DIR/never" >"$DIR/mt.out" 2>"$DIR/mt.err"
	rc=$?
	set -e
	kill $wpid 2>/dev/null || true
	wait $wpid 2>/dev/null || true
	[ $rc -eq 68 ] || fail "$form: exit $rc, want 68 (DEADLINE_EXCEEDED)"
	grep -q 'DEADLINE_EXCEEDED' "$DIR/mt.err" || fail "$form: no DEADLINE_EXCEEDED"
done
# -v on a call that ends with another status: that status on the line
sleep 60 >"$DIR/never" &
wpid=$!
set +e
"$CALL" -v -max-time 0.5 -d @ "$ADDR" $RG/RouteChat <"$DIR/never" >"$DIR/mtv.out" 2>"$DIR/mtv.err"
rc=$?
set -e
kill $wpid 2>/dev/null || true
wait $wpid 2>/dev/null || true
[ $rc -eq 68 ] || fail "-v -max-time 0.5: exit $rc, want 68"
[ "$(grep -c "^rdmx-call: $RG/RouteChat: DEADLINE_EXCEEDED on device tcp, [0-9.]* us" "$DIR/mtv.err")" = 1 ] ||
	fail "-v: not one line with the status DEADLINE_EXCEEDED of RouteChat"
set +e
"$CALL" -max-time abc "$ADDR" $RG/GetFeature >/dev/null 2>"$DIR/mtbad.err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "-max-time abc: exit $rc, want 2"

# -d is not the device any more; --device is
set +e
"$CALL" --device nosuchdev -d "$P11" "$ADDR" $RG/GetFeature >/dev/null 2>"$DIR/dev.err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "--device nosuchdev: exit $rc, want 1"
"$CALL" --device=tcp -d "$P11" "$ADDR" $RG/GetFeature >"$DIR/dev.out" 2>&1 ||
	fail "--device=tcp"
echo "ok: rdmx-call streams, metadata, describe, -max-time"
