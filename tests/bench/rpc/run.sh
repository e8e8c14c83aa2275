#!/usr/bin/env bash
# tests/bench/rpc/run.sh — the RPC benchmark, in one run, on loopback:
# rdmx RPC (rdmx-perf rpc_lat / rpc_bw over the tcp provider) beside a raw
# TCP echo (tcp_echo, same waiting strategy) and a gRPC C++ sync unary echo
# (grpc_echo), for 64 B, 4 KiB, 64 KiB and 1 MiB at 1 and 16 calls in
# flight. Every server runs on core $SERVER_CPU, every client on core
# $CLIENT_CPU (taskset), the same placement for all three.
#
#   tests/bench/rpc/run.sh [BUILD_DIR] [--poll block|busy] [--repeat R]
#                          [--sizes "64 4096 65536 1048576"] [--quick] [--no-grpc]
#
# Each cell is the median of R runs (default 3); the runs of the three
# systems are interleaved, so the load of a shared machine hits them alike.
# BUILD_DIR (default build) must hold tools/rdmx-perf/rdmx-perf and
# tests/bench/tcp_echo. gRPC (libgrpc++-dev, protobuf-compiler-grpc) is
# installed with apt-get when missing, and grpc_echo is built into
# BUILD_DIR/tests/bench/ (--no-grpc: no gRPC runs, its cells are "-").
# Prints a markdown table (docs/BENCHMARKS.md "RPC")
# and leaves the raw RESULT lines in BUILD_DIR/tests/bench/rpc-results.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build=build poll=block quick=0 repeat=3 nogrpc=0 sizes="64 4096 65536 1048576"
while (($#)); do
  case "$1" in
    --poll) poll="$2"; shift ;;
    --quick) quick=1 ;;
    --no-grpc) nogrpc=1 ;;
    --repeat) repeat="$2"; shift ;;
    --sizes) sizes="$2"; shift ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) build="$1" ;;
  esac
  shift
done
build="$(realpath "$build")"
perf="$build/tools/rdmx-perf/rdmx-perf"
tcp="$build/tests/bench/tcp_echo"
grpc="$build/tests/bench/grpc_echo"
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
out="$build/tests/bench/rpc-results.txt"
for b in "$perf" "$tcp"; do
  [[ -x "$b" ]] || { echo "run.sh: $b not built (cmake --build $build)" >&2; exit 1; }
done

# ---- gRPC: install if missing, build the echo ------------------------------
if ((!nogrpc)) && [[ ! -x "$grpc" || "$here/grpc_echo.cc" -nt "$grpc" || "$here/echo.proto" -nt "$grpc" ]]; then
  if ! command -v grpc_cpp_plugin >/dev/null || ! pkg-config --exists grpc++; then
    echo "run.sh: installing gRPC (libgrpc++-dev protobuf-compiler-grpc)" >&2
    apt-get install -y libgrpc++-dev protobuf-compiler-grpc >/dev/null
  fi
  gen="$build/tests/bench/grpc_gen"
  mkdir -p "$gen"
  protoc -I "$here" --cpp_out="$gen" --grpc_out="$gen" \
    --plugin=protoc-gen-grpc="$(command -v grpc_cpp_plugin)" "$here/echo.proto"
  # shellcheck disable=SC2046
  g++ -O2 -std=c++17 -I"$gen" "$here/grpc_echo.cc" "$gen/echo.pb.cc" "$gen/echo.grpc.pb.cc" \
    -o "$grpc" $(pkg-config --cflags --libs grpc++ protobuf) -lpthread
fi

busy_flag=()
[[ $poll == busy ]] && busy_flag=(--busy)
port=$((20000 + RANDOM % 20000))

iters_for() { # size inflight
  local n
  case $1 in 64) n=20000 ;; 4096) n=10000 ;; 65536) n=2000 ;; *) n=300 ;; esac
  ((quick)) && n=$((n / 10))
  echo "$n"
}

# run_pair NAME SERVER_CMD... -- CLIENT_CMD...: one server + one client, pinned.
run_pair() {
  local name=$1; shift
  local srv=() cli=()
  while [[ $1 != -- ]]; do srv+=("$1"); shift; done
  shift
  cli=("$@")
  taskset -c "$SERVER_CPU" "${srv[@]}" >/dev/null 2>&1 &
  local spid=$!
  sleep 0.3
  local line
  line=$(taskset -c "$CLIENT_CPU" "${cli[@]}" 2>/dev/null | grep '^RESULT' | tail -1) || true
  kill "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  port=$((port + 1))
  [[ -n $line ]] || line="RESULT test=$name failed"
  echo "$name $line" | tee -a "$out" >&2
  echo "$line"
}

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
# median FIELD LINE...: the median of FIELD over the lines that have it
median() {
  local f=$1; shift
  local l
  for l in "$@"; do field "$f" "$l"; done | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}

: >"$out"
echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), poll=$poll, repeat=$repeat" >>"$out"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); poll=$poll; median of $repeat runs" >&2
printf '| size | in flight | rdmx RPC p50 / p99 (us) | raw TCP p50 / p99 (us) | gRPC p50 / p99 (us) | rdmx calls/s | TCP msgs/s | gRPC calls/s | rdmx/TCP p50 | rdmx/gRPC calls/s |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for size in $sizes; do
  for t in 1 16; do
    n=$(iters_for "$size" "$t")
    if ((t == 1)); then test=rpc_lat; else test=rpc_bw; fi
    rl=() cl=() gl=()
    for ((k = 0; k < repeat; k++)); do
      rl+=("$(run_pair "rdmx" "$perf" "$test" -d tcp --poll "$poll" -s "$size" -n "$n" -t "$t" -p "$port" -- \
        "$perf" "$test" -d tcp --poll "$poll" -s "$size" -n "$n" -t "$t" -p "$port" 127.0.0.1)")
      cl+=("$(run_pair "tcp" "$tcp" "${busy_flag[@]}" -s "$size" -p "$port" -- \
        "$tcp" "${busy_flag[@]}" -s "$size" -n "$n" -t "$t" -p "$port" 127.0.0.1)")
      ((nogrpc)) && { gl+=("RESULT test=grpc skipped"); continue; }
      gl+=("$(run_pair "grpc" "$grpc" -p "$port" -- "$grpc" -s "$size" -n "$n" -t "$t" -p "$port" 127.0.0.1)")
    done
    rp50=$(median p50_us "${rl[@]}") rp99=$(median p99_us "${rl[@]}") rops=$(median ops_per_s "${rl[@]}")
    cp50=$(median p50_us "${cl[@]}") cp99=$(median p99_us "${cl[@]}") cops=$(median ops_per_s "${cl[@]}")
    gp50=$(median p50_us "${gl[@]}") gp99=$(median p99_us "${gl[@]}") gops=$(median ops_per_s "${gl[@]}")
    ratio_lat=$(awk -v a="$rp50" -v b="$cp50" 'BEGIN{ if (b > 0) printf "%.2fx", a / b; else print "-" }')
    ratio_ops=$(awk -v a="$rops" -v b="$gops" 'BEGIN{ if (b > 0) printf "%.2fx", a / b; else print "-" }')
    printf '| %s | %s | %s / %s | %s / %s | %s / %s | %s | %s | %s | %s | %s |\n' \
      "$size" "$t" "$rp50" "$rp99" "$cp50" "$cp99" "$gp50" "$gp99" "$rops" "$cops" "$gops" \
      "$ratio_lat" "$ratio_ops"
  done
done
