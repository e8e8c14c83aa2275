#!/usr/bin/env bash
# tests/bench/tcp/budget.sh — how many cycles per side a library may spend
# between a message in and the answer out, for its busy 64 B round trip to
# stay within a ratio of raw TCP's, measured beside rdmx in one run:
#
#   tests/bench/tcp/budget.sh [BUILD_DIR] [--rounds R] [-n N] [--work "W1 W2 ..."]
#                             [--compare OTHER_BUILD_DIR]
#
# Each round runs the raw TCP ping-pong (tcp_echo --busy) with --work W for
# every W (TSC cycles spun per side between a whole message in and the next
# one out: a library path of that length, with no cache or TLB cost of its
# own), then rdmx-perf rpc_lat --poll busy; server on core 0, client on core
# 1. Prints each round's p50s, then per W the median p50 and its ratio to
# W = 0, and rdmx's median and ratio: the W whose ratio matches rdmx's is the
# path rdmx costs per side; the W at 1.10x is what the target allows.
# Each round also runs the engine alone, rdmx-perf send_lat --poll busy (a
# send and a receive completion per side, no channel and no RPC; its half
# round trip doubled): the floor the provider's emulation of RDMA semantics
# sets under rdmx's RPC row; and the light message ping-pong (tcp_lat -t msg,
# which pins itself the same way): the provider's own floor under the
# channel's small ring writes, what the RPC row costs without chan/ and rpc/. --compare: each round also runs OTHER_BUILD_DIR's
# rdmx-perf rpc_lat (an earlier tree: a same-run before/after). The host may
# switch speed between rounds: each round's ratios (to its own raw TCP) are
# printed, and their medians at the end.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/pair_lib.sh"
build=build rounds=3 calls=20000 works="0 500 1000 1500 2000 2500" other=
pair_args 2,22 "$@"
[[ $(uname -m) == x86_64 ]] || { echo "budget.sh: x86-64 only (--work spins on rdtsc)" >&2; exit 2; }

tmp="$(mktemp -d /tmp/rdmx-budget-XXXXXX)"
trap '[[ -n $spid ]] && kill "$spid" 2>/dev/null; rm -rf "$tmp"' EXIT
echo "## busy 64 B round trip p50 (us): raw TCP with W cycles per side, and rdmx; load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  line="round $r:"
  for w in $works; do
    v=$(run_pair "$echo_bin" --busy --work "$w" -s 64 -n "$calls")
    echo "$v" >>"$tmp/raw.$w"
    line+=" W=$w $v"
  done
  v=$(run_pair "$perf" rpc_lat -d tcp --poll busy -s 64 -n "$calls")
  echo "$v" >>"$tmp/rdmx"
  e=$(run_pair "$perf" send_lat -d tcp --poll busy -s 64 -n "$calls" | awk '{ printf "%.2f", 2 * $1 }')
  echo "$e" >>"$tmp/engine"
  m=$("$lat_bin" -t msg -s 64 -n "$calls" 2>/dev/null | p50)
  echo "$m" >>"$tmp/msg"
  raw=$(tail -n 1 "$tmp/raw.0")
  ratio() { awk -v a="$1" -v b="$raw" 'BEGIN { printf "%.2f", a / b }'; }
  line+=" rdmx $v ($(ratio "$v")x) engine $e ($(ratio "$e")x) light $m ($(ratio "$m")x)"
  ratio "$v" >"$tmp/r" && echo >>"$tmp/r" && cat "$tmp/r" >>"$tmp/rdmx.ratio"
  ratio "$e" >"$tmp/r" && echo >>"$tmp/r" && cat "$tmp/r" >>"$tmp/engine.ratio"
  ratio "$m" >"$tmp/r" && echo >>"$tmp/r" && cat "$tmp/r" >>"$tmp/msg.ratio"
  if [[ -n $other ]]; then
    o=$(run_pair "$other/tools/rdmx-perf/rdmx-perf" rpc_lat -d tcp --poll busy -s 64 -n "$calls")
    ratio "$o" >"$tmp/r" && echo >>"$tmp/r" && cat "$tmp/r" >>"$tmp/other.ratio"
    line+=" compared $o ($(ratio "$o")x)"
  fi
  echo "$line"
done
base=$(median <"$tmp/raw.0")
for w in $works; do
  m=$(median <"$tmp/raw.$w")
  awk -v w="$w" -v m="$m" -v b="$base" 'BEGIN { printf "W=%s cycles per side: %.2f us, %.2fx raw TCP\n", w, m, m / b }'
done
m=$(median <"$tmp/rdmx")
awk -v m="$m" -v b="$base" 'BEGIN { printf "rdmx: %.2f us, %.2fx raw TCP\n", m, m / b }'
m=$(median <"$tmp/engine")
awk -v m="$m" -v b="$base" 'BEGIN { printf "engine send ping-pong (no channel, no RPC): %.2f us, %.2fx raw TCP\n", m, m / b }'
m=$(median <"$tmp/msg")
awk -v m="$m" -v b="$base" 'BEGIN { printf "light message ping-pong (tcp_lat -t msg: no channel, no RPC): %.2f us, %.2fx raw TCP\n", m, m / b }'
echo "median of the rounds' own ratios: rdmx $(median <"$tmp/rdmx.ratio")x," \
  "engine $(median <"$tmp/engine.ratio")x, light $(median <"$tmp/msg.ratio")x${other:+, compared $(median <"$tmp/other.ratio")x}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
