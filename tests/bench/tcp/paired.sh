#!/usr/bin/env bash
# tests/bench/tcp/paired.sh — the busy 64 B round trip of rdmx RPC, and of
# light messages alone, as ratios to raw TCP measured right before and right
# after them, on a host that switches speed every few seconds:
#
#   tests/bench/tcp/paired.sh [BUILD_DIR] [--rounds R] [-n N] [--compare OTHER_BUILD_DIR]
#
# Each round runs raw TCP (tcp_echo --busy), rdmx-perf rpc_lat --poll busy,
# tcp_lat -t msg (light messages, no channel or RPC), OTHER_BUILD_DIR's
# rpc_lat if given, and raw TCP again, N calls each (default 5000: short runs
# rarely straddle a switch); server on core 0, client on core 1. A round
# counts only when its two raw TCP p50s agree within 3% (the host kept one
# speed through it); its ratios are to their mean. The rounds kept are split
# by that mean into the host's fast mode (below 11 us) and slow mode, and
# each mode's median ratios are printed with how many rounds it kept.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/pair_lib.sh"
build=build rounds=40 calls=5000 other=
pair_args 2,16 "$@"
tmp="$(mktemp -d /tmp/rdmx-paired-XXXXXX)"
trap '[[ -n $spid ]] && kill "$spid" 2>/dev/null; rm -rf "$tmp"' EXIT
raw() { run_pair "$echo_bin" --busy -s 64 -n "$calls"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b <= 0) print ""; else printf "%.3f", a / b }'; }

echo "## busy 64 B round trip, ratios to the raw TCP around each run; load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  a=$(raw)
  v=$(run_pair "$perf" rpc_lat -d tcp --poll busy -s 64 -n "$calls")
  m=$("$lat_bin" -t msg -s 64 -n "$calls" -w 500 2>/dev/null | p50)
  o=
  [[ -n $other ]] && o=$(run_pair "$other/tools/rdmx-perf/rdmx-perf" rpc_lat -d tcp --poll busy -s 64 -n "$calls")
  b=$(raw)
  line="round $r: raw $a / $b, rdmx $v, light $m${other:+, compared $o}"
  if [[ -z $a || -z $b ]] || ! awk -v a="$a" -v b="$b" 'BEGIN { d = a > b ? a - b : b - a; m = a < b ? a : b; exit !(d <= 0.03 * m) }'; then
    echo "$line: dropped (the host switched)"
    continue
  fi
  base=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", (a + b) / 2 }')
  mode=$(awk -v x="$base" 'BEGIN { print (x < 11 ? "fast" : "slow") }')
  rv=$(ratio "$v" "$base") rm=$(ratio "$m" "$base") ro=$(ratio "$o" "$base")
  echo "$line: $mode, rdmx ${rv}x, light ${rm}x${other:+, compared ${ro}x}"
  echo "$rv" >>"$tmp/$mode.rdmx"
  echo "$rm" >>"$tmp/$mode.light"
  [[ -n $other ]] && echo "$ro" >>"$tmp/$mode.other"
  echo "$base" >>"$tmp/$mode.raw"
done
for mode in fast slow; do
  [[ -s $tmp/$mode.raw ]] || { echo "$mode mode: no round kept"; continue; }
  echo "$mode mode: $(wc -l <"$tmp/$mode.raw") rounds kept, raw TCP $(median <"$tmp/$mode.raw") us;" \
    "rdmx RPC $(median <"$tmp/$mode.rdmx")x, light messages $(median <"$tmp/$mode.light")x" \
    "${other:+, compared $(median <"$tmp/$mode.other")x}"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
