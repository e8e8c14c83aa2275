#!/usr/bin/env bash
# tests/bench/table.sh — the speed table of issue 16 in ONE run, every rdmx
# figure beside its anchor measured in the same run on the same machine:
#
#   tcp RPC round trip 64 B, busy       rdmx-perf rpc_lat --poll busy  vs raw TCP ping-pong (tcp_echo --busy)
#   tcp RPC round trip 64 B, blocking   rdmx-perf rpc_lat --poll block vs raw TCP ping-pong (tcp_echo)
#   tcp write_bw / read_bw 1 MiB, 16 in flight   rdmx-perf write_bw / read_bw -d tcp
#                                       vs a raw TCP stream (tcp_echo --stream -s 1M)
#   RPC echo 1 MiB, 16 in flight        rdmx-perf rpc_bw, rate each way (calls/s x 1 MiB)
#                                       vs the same raw TCP stream, one way
#   kv 64 MiB put in scripts/demo       the put's latency in services/kv/demo.sh (sealed
#                                       secure path) vs 64 MiB over a raw TCP stream
#                                       (tcp_echo --stream -s 64M), and beside it the sealed
#                                       engine bandwidth (bench_seal, 1 MiB writes)
#   calls/s at 16 in flight, 64 B       rdmx-perf rpc_bw vs gRPC C++ (grpc_echo), blocking
#   with --guest: the verbs rows        tests/vm/bench --repeat G (one Soft-RoCE guest boot,
#                                       rdmx-perf vs perftest; the ratio is the median of
#                                       the passes' own ratios; G: --guest-repeat, default 9)
#
#   tests/bench/table.sh [BUILD_DIR] [--repeat R] [--guest] [--guest-repeat G] [--quick]
#
# BUILD_DIR (default build) must hold rdmx-perf, tcp_echo, bench_seal,
# rdmx-kv, rdmx-bootstrapd, rdmx-certs and rdmx-call (cmake --build BUILD_DIR
# --target rdmx-perf tcp_echo bench_seal rdmx-kv rdmx-bootstrapd rdmx-certs
# rdmx-call). It calls the existing benchmarks and does not repeat them:
# tests/bench/rpc/run.sh (round trips, RPC echo, gRPC; it builds grpc_echo
# and installs gRPC C++ when missing; without gRPC the gRPC row says so),
# rdmx-perf and tcp_echo for the bandwidth rows, services/kv/demo.sh for the
# kv put, bench_seal for the sealed engine rate, tests/vm/bench for verbs.
# Every figure is the median of R runs (default 3), the runs of rdmx and its
# anchor interleaved. Servers run on core $SERVER_CPU (0), clients on core
# $CLIENT_CPU (1). Prints `uptime` before and after, then one markdown table:
# | measure | rdmx | anchor | ratio | target |. --quick: fewer iterations
# (a smoke run, not a measurement). Raw lines: BUILD_DIR/tests/bench/table-raw.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/../.." && pwd)"
build=build repeat=3 guest=0 guest_repeat=9 quick=0
while (($#)); do
  case "$1" in
    --repeat) repeat="$2"; shift ;;
    --guest) guest=1 ;;
    --guest-repeat) guest=1 guest_repeat="$2"; shift ;;
    --quick) quick=1 ;;
    -h | --help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "table.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) build="$1" ;;
  esac
  shift
done
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "table.sh: --repeat wants a positive number" >&2; exit 2; }
build="$(realpath "$build")"
perf="$build/tools/rdmx-perf/rdmx-perf"
tcp="$build/tests/bench/tcp_echo"
seal="$build/tests/bench/bench_seal"
for b in "$perf" "$tcp" "$seal" "$build/services/kv/rdmx-kv"; do
  [[ -x $b ]] || { echo "table.sh: $b not built (see --help for the targets)" >&2; exit 1; }
done
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
export SERVER_CPU CLIENT_CPU
raw="$build/tests/bench/table-raw.txt"
tmp="$(mktemp -d /tmp/rdmx-table-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
bw_n=500 mib64_n=4
((quick)) && bw_n=50 mib64_n=1
quick_flag=()
((quick)) && quick_flag=(--quick)

log() { echo "table.sh: $*" >&2; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "-" }'; }
port=$((20000 + RANDOM % 20000))

# pair SERVER_CMD... -- CLIENT_CMD...: one pinned server and client; the
# client's RESULT line (or "RESULT failed")
pair() {
  local srv=() cli=() line spid
  while [[ $1 != -- ]]; do srv+=("$1"); shift; done
  shift
  cli=("$@")
  taskset -c "$SERVER_CPU" "${srv[@]}" >/dev/null 2>&1 &
  spid=$!
  sleep 0.3
  line=$(taskset -c "$CLIENT_CPU" "${cli[@]}" 2>/dev/null | grep '^RESULT' | tail -1) || true
  kill "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  port=$((port + 1))
  echo "${line:-RESULT failed}" | tee -a "$raw"
}

: >"$raw"
before="$(uptime)"
log "uptime before: $before"

# ---- round trips, RPC echo 1 MiB, calls/s vs gRPC: tests/bench/rpc/run.sh --
grpc_flag=()
if ! { command -v grpc_cpp_plugin >/dev/null && pkg-config --exists grpc++; } &&
  ! apt-get install -y libgrpc++-dev protobuf-compiler-grpc >/dev/null 2>&1; then
  log "gRPC C++ is not installed and cannot be: no gRPC row"
  grpc_flag=(--no-grpc)
fi
log "run.sh --poll busy --sizes 64"
"$here/rpc/run.sh" "$build" --repeat "$repeat" --poll busy --sizes 64 \
  ${grpc_flag[@]+"${grpc_flag[@]}"} "${quick_flag[@]+"${quick_flag[@]}"}" >"$tmp/busy.md"
log "run.sh --poll block --sizes \"64 1048576\""
"$here/rpc/run.sh" "$build" --repeat "$repeat" --poll block --sizes "64 1048576" \
  ${grpc_flag[@]+"${grpc_flag[@]}"} "${quick_flag[@]+"${quick_flag[@]}"}" >"$tmp/block.md"
cat "$tmp/busy.md" "$tmp/block.md" >>"$raw"
# cell FILE SIZE INFLIGHT COLUMN: a cell of run.sh's table (columns: 1 size,
# 2 in flight, 3 rdmx p50/p99, 4 TCP p50/p99, 5 gRPC p50/p99, 6 rdmx calls/s,
# 7 TCP msgs/s, 8 gRPC calls/s); the p50 of a "p50 / p99" cell
cell() {
  awk -F'|' -v s="$2" -v t="$3" -v c="$4" '
    { gsub(/ /, "", $2); gsub(/ /, "", $3) }
    $2 == s && $3 == t { v = $(c + 1); sub(/\/.*/, "", v); gsub(/ /, "", v); print v }' "$1"
}
busy_r=$(cell "$tmp/busy.md" 64 1 3) busy_t=$(cell "$tmp/busy.md" 64 1 4)
block_r=$(cell "$tmp/block.md" 64 1 3) block_t=$(cell "$tmp/block.md" 64 1 4)
ops16_r=$(cell "$tmp/block.md" 64 16 6) ops16_g=$(cell "$tmp/block.md" 64 16 8)
echo_ops=$(cell "$tmp/block.md" 1048576 16 6)
echo_mib=$(awk -v o="$echo_ops" 'BEGIN { if (o + 0 > 0) printf "%.0f", o; else print "-" }')

# ---- engine bandwidth 1 MiB x 16 and the raw TCP stream, interleaved ------
wl=() rl=() sl=() kl=()
for ((k = 0; k < repeat; k++)); do
  log "bandwidth round $((k + 1)) of $repeat"
  for t in write_bw read_bw; do
    line=$(pair "$perf" $t -d tcp -s 1048576 -n "$bw_n" -t 16 -q -p "$port" -- \
      "$perf" $t -d tcp -s 1048576 -n "$bw_n" -t 16 -q -p "$port" 127.0.0.1)
    if [[ $t == write_bw ]]; then wl+=("$(field mib_s "$line")"); else rl+=("$(field mib_s "$line")"); fi
  done
  line=$(pair "$tcp" --stream -s 1M -p "$port" -- "$tcp" --stream -s 1M -n "$bw_n" -p "$port" 127.0.0.1)
  sl+=("$(field mib_s "$line")")
  line=$(pair "$tcp" --stream -s 64M -p "$port" -- "$tcp" --stream -s 64M -n "$mib64_n" -p "$port" 127.0.0.1)
  kl+=("$(field p50_us "$line")")
done
write_bw=$(printf '%s\n' "${wl[@]}" | median) read_bw=$(printf '%s\n' "${rl[@]}" | median)
stream=$(printf '%s\n' "${sl[@]}" | median)
tcp64_ms=$(printf '%s\n' "${kl[@]}" | median | awk '{ if ($1 + 0 > 0) printf "%.1f", $1 / 1000; else print "-" }')

# ---- kv 64 MiB put in the demo session, and the sealed engine rate ---------
pl=()
for ((k = 0; k < repeat; k++)); do
  log "kv demo round $((k + 1)) of $repeat"
  out=$(RDMX_DEMO_DIR="$tmp/demo" BIG=64M "$src/services/kv/demo.sh" "$build" 2>&1) || {
    log "services/kv/demo.sh failed"
    printf '%s\n' "$out" | tail -20 >&2
  }
  line=$(grep -E '^ *put +blob ' <<<"$out" | head -n 1) || true
  echo "kv: $line" >>"$raw"
  pl+=("$(awk '{ for (i = 1; i < NF; i++) if ($i == "OK") {
      v = $(i + 1); u = $(i + 2)
      if (u == "s") v *= 1000; else if (u == "us") v /= 1000
      printf "%.1f\n", v; exit } }' <<<"$line")")
done
kv_ms=$(printf '%s\n' "${pl[@]}" | grep . | median)
log "bench_seal (sealed vs plaintext engine writes)"
mib=256
((quick)) && mib=16
seal_out=$(RDMX_TCP_ADDR=127.0.0.1 "$seal" -r "$repeat" -n 2000 -m "$mib" 2>&1) || true
printf '%s\n' "$seal_out" >>"$raw"
seal_1m=$(awk -F'|' '/^\| write 1 MiB|^\| .*1 MiB/ { gsub(/ /, "", $4); print $4; exit }' <<<"$seal_out")
plain_1m=$(awk -F'|' '/^\| write 1 MiB|^\| .*1 MiB/ { gsub(/ /, "", $3); print $3; exit }' <<<"$seal_out")
kv_sealed_ms=$(awk -v b="$seal_1m" 'BEGIN { if (b + 0 > 0) printf "%.1f", 64 * 1048576 / (b * 1e6) * 1000; else print "-" }')

# ---- verbs rows: one guest boot --------------------------------------------
vm_md=
if ((guest)); then
  log "tests/vm/bench --repeat $guest_repeat --lat-iters 5000 (one Soft-RoCE guest boot)"
  vm_out=$("$src/tests/vm/bench" --build-dir "$build" --repeat "$guest_repeat" --lat-iters 5000 2>&1) ||
    log "tests/vm/bench failed"
  printf '%s\n' "$vm_out" >>"$raw"
  vm_md=$(grep -E '^\| ib_' <<<"$vm_out" || true)
fi
after="$(uptime)"
log "uptime after: $after"

# ---- the table --------------------------------------------------------------
echo "uptime before: $before"
echo "uptime after:  $after"
echo "(medians of $repeat; rdmx-perf -d tcp on loopback, servers on core $SERVER_CPU, clients on core $CLIENT_CPU)"
echo
echo "| measure | rdmx | anchor | ratio | target |"
echo "|---|---|---|---|---|"
if [[ -n $vm_md ]]; then
  while IFS='|' read -r _ name size p x _ r _; do
    name=${name// /} size=${size// /}
    case $name in *_lat) tgt="<= 1.10x" ;; *) tgt=">= 0.95x" ;; esac
    r=${r%%(*} r=${r// /} # the median of the passes' ratios
    [[ $r =~ ^[0-9.]+$ ]] && r="${r}x"
    echo "| verbs on Soft-RoCE, ${name#ib_} $size B |${x}| ${name}${p}| $r | $tgt |"
  done <<<"$vm_md"
fi
echo "| tcp RPC round trip 64 B, busy | $busy_r us | raw TCP ping-pong $busy_t us | $(ratio "$busy_r" "$busy_t") | <= 1.10x |"
echo "| tcp RPC round trip 64 B, blocking | $block_r us | raw TCP ping-pong $block_t us | $(ratio "$block_r" "$block_t") | <= 1.25x |"
echo "| tcp write_bw 1 MiB, 16 in flight | $write_bw MiB/s | raw TCP stream $stream MiB/s | $(ratio "$write_bw" "$stream") | >= 0.90x |"
echo "| tcp read_bw 1 MiB, 16 in flight | $read_bw MiB/s | raw TCP stream $stream MiB/s | $(ratio "$read_bw" "$stream") | >= 0.85x |"
echo "| RPC echo 1 MiB, 16 in flight (rate each way) | $echo_mib MiB/s | raw TCP stream, one way $stream MiB/s | $(ratio "$echo_mib" "$stream") | >= 0.4x |"
echo "| kv 64 MiB put in scripts/demo (sealed) | $kv_ms ms | 64 MiB over raw TCP $tcp64_ms ms | $(ratio "$kv_ms" "$tcp64_ms") slower | <= 3x |"
echo "| same, vs 64 MiB at the sealed engine rate (bench_seal 1 MiB writes: $seal_1m MB/s sealed, $plain_1m plaintext) | $kv_ms ms | $kv_sealed_ms ms | $(ratio "$kv_ms" "$kv_sealed_ms") slower | (what is ours) |"
if ((${#grpc_flag[@]})); then
  echo "| calls/s, 64 B, 16 in flight | $ops16_r | gRPC C++: not installed | - | >= 5x |"
else
  echo "| calls/s, 64 B, 16 in flight (blocking) | $ops16_r | gRPC C++ $ops16_g | $(ratio "$ops16_r" "$ops16_g") | >= 5x |"
fi
