# tests/bench/tcp/pair_lib.sh — sourced by budget.sh and paired.sh: running
# a busy ping-pong pair on loopback (server on core 0, client on core 1) and
# reading its p50. The sourcing script sets the EXIT trap that kills $spid.

spid=
# The p50_us of a RESULT line on stdin.
p50() { sed -n 's/^RESULT .*p50_us=\([0-9.]*\).*/\1/p'; }
# The median of the numbers on stdin, one per line ("-" for none).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
# run_pair CMD ARGS...: runs CMD ARGS -p PORT as the server and CMD ARGS -p
# PORT 127.0.0.1 as the client; prints the client's p50.
run_pair() {
  local port=$((30000 + RANDOM % 20000)) out
  taskset -c 0 "$@" -p "$port" >/dev/null 2>&1 &
  spid=$!
  sleep 0.3
  out=$(taskset -c 1 "$@" -p "$port" 127.0.0.1 2>/dev/null | p50)
  wait "$spid" 2>/dev/null || true
  spid=
  echo "$out"
}
