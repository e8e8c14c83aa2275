#!/bin/sh
# rdmx-perf with perftest's conventions on the tcp device: default sizes and
# iterations, the latency and bandwidth columns, the header, the server's
# own results, --report_gbits, --out_json, -a, -D (with its meter on a
# terminal), atomic_bw, and one line while the server is not up yet.
#   perf.sh RDMX_PERF
set -eu
PERF=$1
. "$(dirname "$0")/../../support/lib.sh"
test_init rdmx-perf
# below the ephemeral range (32768-60999 by default): an outgoing socket of a
# test running beside this one once held the port a server here wanted
PORT=$((20000 + $$ % 12000))

# pair NAME ARGS...: server then client on a fresh port; outputs NAME.srv.out, NAME.cli.out
pair() {
	name=$1
	shift
	PORT=$((PORT + 1))
	$DEATH "$PERF" "$@" -p $PORT >"$DIR/$name.srv.out" 2>&1 &
	srv=$!
	PIDS="$PIDS $srv"
	$DEATH "$PERF" "$@" -p $PORT 127.0.0.1 >"$DIR/$name.cli.out" 2>&1 || fail "$name: client failed"
	wait $srv || fail "$name: server failed"
}

pair lat send_lat
c=$DIR/lat.cli.out
grep -q '^ #bytes #iterations    t_min\[usec\]    t_max\[usec\]  t_typical\[usec\]    t_avg\[usec\]    t_stdev\[usec\]   99% percentile\[usec\]   99.9% percentile\[usec\]' "$c" ||
	fail "send_lat: not perftest's latency columns"
grep -q '^ 2 *1000 ' "$c" || fail "send_lat: defaults are not 2 bytes, 1000 iterations"
grep -q '^ Device          : tcp' "$c" || fail "send_lat: no device in the header"
grep -q 'Provider       : tcp' "$c" || fail "send_lat: no provider in the header"
grep -q '^ Mtu             : [0-9]*\[B\]' "$c" || fail "send_lat: no MTU in the header"
grep -q '^ TX depth        : [0-9]*		RX depth       : [0-9]*' "$c" || fail "send_lat: no queue sizes"
grep -q '^RESULT test=send_lat size=2 ' "$c" || fail "send_lat: no RESULT line"
grep -q '^ 2 *1000 ' "$DIR/lat.srv.out" || fail "send_lat: the server printed no results"

pair bw send_bw -n 300 --report_gbits --out_json
c=$DIR/bw.cli.out
grep -q '^ #bytes     #iterations    BW peak\[Gb/sec\]    BW average\[Gb/sec\]   MsgRate\[Mpps\]' "$c" ||
	fail "send_bw --report_gbits: not perftest's bandwidth columns"
grep -q '^ 65536 *300 ' "$c" || fail "send_bw: default size is not 65536"
grep -q '^{"test":"send_bw","bytes":65536,"iterations":300,' "$c" || fail "send_bw: no --out_json line"
grep -q '^ 65536 *300 ' "$DIR/bw.srv.out" || fail "send_bw: the server printed no results"

pair bwd write_bw -s 4096 -n 100
grep -q '^ #bytes     #iterations    BW peak\[MB/sec\]    BW average\[MB/sec\]   MsgRate\[Mpps\]' \
	"$DIR/bwd.cli.out" || fail "write_bw: MB/sec columns"
grep -q '^ 4096 *100 ' "$DIR/bwd.cli.out" || fail "write_bw -n 100"

# -I/--inline_size: set on both sides, printed in the header; above the
# device's max_inline (tcp: 1024) the set-up fails with a line naming it
pair inl write_lat -s 64 -n 100 -I 64
grep -q '^ Inline size     : 64\[B\]		Max inline     : 1024\[B\]' "$DIR/inl.cli.out" ||
	fail "write_lat -I 64: no inline size in the header"
grep -q '^ 64 *100 ' "$DIR/inl.cli.out" || fail "write_lat -I 64: no result"
grep -q '^ Inline size     : 64\[B\]' "$DIR/inl.srv.out" || fail "-I 64: server header"
pair inl2 send_bw -s 512 -n 100 --inline_size=512
grep -q '^ 512 *100 ' "$DIR/inl2.cli.out" || fail "send_bw --inline_size=512: no result"
grep -q '^ Inline size     : 0\[B\]' "$DIR/lat.cli.out" || fail "inline is not 0 by default"
if "$PERF" send_lat -I 4096 -p $((PORT + 1)) >"$DIR/inlbig.out" 2>&1; then
	fail "-I above max_inline accepted"
fi
grep -q "rdmx-perf: --inline_size 4096 is above tcp's max_inline 1024" "$DIR/inlbig.out" ||
	fail "-I 4096: no line naming the limit"
rc=0; "$PERF" send_lat -I x >"$DIR/inlbad.out" 2>&1 || rc=$?
[ $rc = 2 ] || fail "-I x: exit $rc, expected 2"
grep -q "rdmx-perf: bad value 'x' for --inline_size" "$DIR/inlbad.out" || fail "-I x: $(cat "$DIR/inlbad.out")"

# the perftest-style latency loops (one clock read per iteration; write_lat
# spins on its landing byte): both sides of write_lat report, read_lat's client
pair wlat write_lat -s 64 -n 200
grep -q '^ 64 *200 ' "$DIR/wlat.cli.out" || fail "write_lat: no client result"
grep -q '^ 64 *200 ' "$DIR/wlat.srv.out" || fail "write_lat: no server result"
grep -q '^RESULT test=write_lat size=64 p50_us=[0-9.]* ' "$DIR/wlat.cli.out" || fail "write_lat: RESULT"
pair rlat read_lat -s 64 -n 200
grep -q '^RESULT test=read_lat size=64 p50_us=[0-9.]* ' "$DIR/rlat.cli.out" || fail "read_lat: RESULT"
grep -q '^rdmx-perf: read_lat server: the device served the one-sided operations' "$DIR/rlat.srv.out" ||
	fail "read_lat: the server does not say the device served"

pair atomic atomic_bw -n 200
grep -q '^ 8 *200 ' "$DIR/atomic.cli.out" || fail "atomic_bw: 8-byte operations"

pair all send_lat -a -n 5
n=$(grep -c '^RESULT test=send_lat ' "$DIR/all.cli.out")
[ "$n" = 23 ] || fail "-a: $n sizes, want 23 (2..8388608)"
grep -q '^RESULT test=send_lat size=8388608 ' "$DIR/all.cli.out" || fail "-a: no 8388608"

pair dur send_bw -s 4096 -D 1
grep -q '^ 4096 *[1-9]' "$DIR/dur.cli.out" || fail "-D 1: no iterations"
grep -q "send_bw:.*left" "$DIR/dur.cli.out" && fail "-D: a meter off a terminal"
"$PERF" send_lat -D 1 127.0.0.1 >/dev/null 2>&1 && fail "-D on a latency test accepted"
if command -v script >/dev/null; then
	PORT=$((PORT + 1))
	$DEATH "$PERF" write_bw -s 4096 -p $PORT >"$DIR/durt.srv.out" 2>&1 &
	srv=$!
	PIDS="$PIDS $srv"
	script -qc "'$PERF' write_bw -s 4096 -D 1 -p $PORT 127.0.0.1" /dev/null </dev/null \
		>"$DIR/durt.cli.out" 2>&1 || fail "-D under script"
	wait $srv || fail "-D under script: server"
	grep -q "write_bw: .*/s .*left" "$DIR/durt.cli.out" || fail "-D: no meter on a terminal"
else
	echo "SKIP (loud): script(1) missing: the -D meter on a terminal is not checked"
fi

# a client started before its server says so once, and connects once it is up
PORT=$((PORT + 1))
$DEATH "$PERF" send_lat -n 50 -p $PORT 127.0.0.1 >"$DIR/early.cli.out" 2>&1 &
cli=$!
PIDS="$PIDS $cli"
i=0
until grep -q 'waiting for the server' "$DIR/early.cli.out"; do
	i=$((i + 1)); [ $i -gt 200 ] && fail "the early client said nothing"
	sleep 0.1
done
$DEATH "$PERF" send_lat -n 50 -p $PORT >"$DIR/early.srv.out" 2>&1 || fail "late server failed"
wait $cli || fail "the early client failed"
[ "$(grep -c 'waiting for the server at 127.0.0.1 port' "$DIR/early.cli.out")" = 1 ] ||
	fail "the waiting line is not said exactly once"
echo "ok: rdmx-perf perftest conventions"
