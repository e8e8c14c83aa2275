#!/usr/bin/env bash
# tests/bench/rpc/stream_run.sh — the streaming benchmark, in one run, on
# loopback: rdmx streams (stream_bench over the tcp provider) beside gRPC C++
# (grpc_stream, sync API): server-streaming messages/s at 64 B and 4 KiB,
# bidi ping-pong latency per message and the unary round trip (64 B, 4 KiB);
# rdmx's server-streaming with its default receive window (1 MiB) and
# with a 256 KiB one.
# Servers on core $SERVER_CPU, clients on core $CLIENT_CPU (taskset).
#
#   tests/bench/rpc/stream_run.sh [BUILD_DIR] [--repeat R] [--quick]
#
# Each cell is the median of R runs (default 3), the runs of the two systems
# interleaved. gRPC (libgrpc++-dev, protobuf-compiler-grpc) is installed with
# apt-get when missing; grpc_stream is built into BUILD_DIR/tests/bench/.
# Prints `uptime` before and after, then a markdown table (docs/BENCHMARKS.md
# "RPC streams").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build=build repeat=3 quick=0
while (($#)); do
  case "$1" in
    --repeat) repeat="$2"; shift ;;
    --quick) quick=1 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) build="$1" ;;
  esac
  shift
done
build="$(realpath "$build")"
ours="$build/tests/bench/stream_bench"
grpc="$build/tests/bench/grpc_stream"
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
[[ -x "$ours" ]] || { echo "stream_run.sh: $ours not built" >&2; exit 1; }
if [[ ! -x "$grpc" || "$here/grpc_stream.cc" -nt "$grpc" || "$here/stream.proto" -nt "$grpc" ]]; then
  if ! command -v grpc_cpp_plugin >/dev/null || ! pkg-config --exists grpc++; then
    echo "stream_run.sh: installing gRPC (libgrpc++-dev protobuf-compiler-grpc)" >&2
    apt-get install -y libgrpc++-dev protobuf-compiler-grpc >/dev/null
  fi
  gen="$build/tests/bench/grpc_gen"
  mkdir -p "$gen"
  protoc -I "$here" --cpp_out="$gen" --grpc_out="$gen" \
    --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" "$here/stream.proto"
  # shellcheck disable=SC2046
  g++ -O2 -std=c++17 -I"$gen" "$here/grpc_stream.cc" "$gen/stream.pb.cc" "$gen/stream.grpc.pb.cc" \
    -o "$grpc" $(pkg-config --cflags --libs grpc++ protobuf) -lpthread
fi
n64=200000 n4k=50000 rounds=20000
((quick)) && { n64=20000; n4k=5000; rounds=2000; }
res=$(mktemp)
gpid=
trap '[[ -n $gpid ]] && kill $gpid 2>/dev/null; rm -f "$res"' EXIT
load_before=$(uptime)
port=$((20000 + RANDOM % 20000))
taskset -c "$SERVER_CPU" "$grpc" -l "$port" >/dev/null 2>&1 &
gpid=$!
for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
  sleep 0.1
done
for ((i = 0; i < repeat; i++)); do
  for size in 64 4096; do
    n=$n64; [[ $size == 4096 ]] && n=$n4k
    # stream_bench: the server thread stays on the cores taskset gives
    taskset -c "$SERVER_CPU,$CLIENT_CPU" "$ours" -s "$size" -n "$n" -r "$rounds" >>"$res"
    taskset -c "$CLIENT_CPU" "$grpc" -s "$size" -n "$n" -r "$rounds" "127.0.0.1:$port" >>"$res"
    taskset -c "$SERVER_CPU,$CLIENT_CPU" "$ours" -s "$size" -n "$n" -r "$rounds" -W 262144 |
      grep ' stream ' >>"$res"
  done
done
med() { # system kind size
  awk -v s="$1" -v k="$2" -v z="$3" '$2 == s && $3 == k && $4 == z {print $6}' "$res" |
    sort -g | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)]; else print "-"}'
}
load_after=$(uptime)
echo "uptime before: $load_before"
echo "uptime after:  $load_after"
echo
echo "| measurement | rdmx (tcp provider) | gRPC C++ | ratio |"
echo "|---|---|---|---|"
for size in 64 4096; do
  o=$(med rdmx stream $size) g=$(med grpc stream $size)
  echo "| server-streaming, $size B, messages/s | $o | $g | $(awk -v a="$o" -v b="$g" 'BEGIN {printf "%.1fx", a / b}') |"
  o=$(med rdmx-w stream $size)
  echo "| server-streaming, $size B, messages/s, rdmx window 256 KiB | $o | $g | $(awk -v a="$o" -v b="$g" 'BEGIN {printf "%.1fx", a / b}') |"
done
for size in 64 4096; do
  o=$(med rdmx bidi $size) g=$(med grpc bidi $size)
  echo "| bidi ping-pong, $size B, us per message | $o | $g | $(awk -v a="$o" -v b="$g" 'BEGIN {printf "%.2fx", a / b}') |"
  o=$(med rdmx unary $size) g=$(med grpc unary $size)
  echo "| unary round trip, $size B, us | $o | $g | $(awk -v a="$o" -v b="$g" 'BEGIN {printf "%.2fx", a / b}') |"
done
echo
echo "bidi / unary (rdmx, 64 B): $(awk -v a="$(med rdmx bidi 64)" -v b="$(med rdmx unary 64)" 'BEGIN {printf "%.2f", a / b}')"
