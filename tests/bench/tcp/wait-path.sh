#!/usr/bin/env bash
# tests/bench/tcp/wait-path.sh — the tcp provider's waiting path, in one run:
#
#   tests/bench/tcp/wait-path.sh [BUILD_DIR] [--before OTHER_BUILD_DIR]... [--rounds R] [-n N]
#                                [--no-strace] [--no-lat] [--layers] [--gap] [--cycles]
#
# 1. System calls per 64 B RPC round trip (rdmx-perf rpc_lat --poll block),
#    per side, every thread (`strace -f -c`), divided by the calls made
#    (N + N/10 warm-up). The soft NIC thread's epoll_pwait2 / ppoll are part
#    of the count.
# 2. Round-trip p50 of rdmx-perf rpc_lat 64 B beside the raw TCP echo
#    (tests/bench/tcp_echo), blocking then busy, R interleaved rounds
#    (rdmx, [the --before build's rdmx,] raw TCP in each round); medians.
#    Server on core 0, client on core 1 (taskset).
# 3. With --layers: user-space instructions per 64 B round trip, per side, by
#    layer (valgrind's callgrind, self cost by source folder: engine/providers/tcp,
#    engine, chan, rpc, common, libc, ld.so (start-up), the rest: the benchmark
#    program's own loop and timing), rdmx-perf rpc_lat --poll block beside the raw
#    TCP echo. Deterministic: the count does not depend on load.
# 4. With --gap: the user-space critical path of a busy 64 B round trip, per
#    side: the median time from a recv that returned data to the next send
#    entering (perf record of the raw_syscalls tracepoints for 0.5 s of
#    rpc_lat --poll busy), R rounds of rdmx [, the --before build,] and the
#    raw TCP echo, whose gap is the tracepoints' own cost: rdmx minus raw
#    TCP is the library's time between a message in and the answer out.
# 5. With --cycles: the cycles each side spends inside its system calls, busy
#    64 B, R rounds of rdmx [, the --before builds,] and the raw TCP echo
#    (tests/bench/syscall_cycles.so, LD_PRELOAD, TSC around recv / send /
#    sendmsg): a recv that brought bytes, one that found nothing, a send
#    (on loopback it also runs the receiving socket's TCP input), and the
#    user time of an empty poll turn. What the kernel charges per message
#    for the way the library holds its sockets shows here, not in --gap.
# The load average is printed before and after each part: on a shared
# machine read the ratios of one round, not absolute numbers.
# BUILD_DIR (default build) holds tools/rdmx-perf/rdmx-perf and
# tests/bench/tcp_echo; each --before names another build (an older tree, other
# build flags; its rdmx-perf only) to put beside it, in the order given.
set -euo pipefail

build=build befores=() rounds=5 n=20000 do_strace=1 do_lat=1 do_layers=0 do_gap=0 do_cycles=0
while (($#)); do
  case "$1" in
    --before) befores+=("$(realpath "$2")"); shift ;;
    --rounds) rounds="$2"; shift ;;
    -n) n="$2"; shift ;;
    --no-strace) do_strace=0 ;;
    --no-lat) do_lat=0 ;;
    --layers) do_layers=1 ;;
    --gap) do_gap=1 ;;
    --cycles) do_cycles=1 ;;
    -h | --help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) build="$1" ;;
  esac
  shift
done
build="$(realpath "$build")"
tcp="$build/tests/bench/tcp_echo"
port=$((20000 + RANDOM % 20000))
load() { cut -d' ' -f1-3 /proc/loadavg; }
perf_of() { echo "$1/tools/rdmx-perf/rdmx-perf"; }
builds=("$build")
builds+=("${befores[@]}")
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if ((do_strace)); then
  command -v strace >/dev/null || { echo "wait-path.sh: strace missing (apt-get install strace)" >&2; exit 1; }
  sn=5000
  echo "## system calls per round trip (rpc_lat 64 B --poll block, $sn calls + $((sn / 10)) warm-up); load $(load)"
  for b in "${builds[@]}"; do
    p=$(perf_of "$b")
    strace -f -c -o "$tmp/srv" taskset -c 0 "$p" rpc_lat -d tcp --poll block -s 64 -n $sn -p $port -q >/dev/null 2>&1 &
    spid=$!
    sleep 0.5
    strace -f -c -o "$tmp/cli" taskset -c 1 "$p" rpc_lat -d tcp --poll block -s 64 -n $sn -p $port -q 127.0.0.1 >/dev/null 2>&1
    wait $spid || true
    port=$((port + 1))
    for side in srv cli; do
      # rows of calls made at least once per 20 round trips
      awk -v N=$((sn + sn / 10)) -v b="$b" -v side="$side" '
        $NF ~ /^[a-z_0-9]+$/ && $NF != "total" && $4 + 0 > N / 20 {
          e = ($5 ~ /^[0-9]+$/) ? $5 : 0
          row = row sprintf(" %s %.2f", $NF, $4 / N); if (e) row = row sprintf(" (%.2f EAGAIN/err)", e / N); t += $4 }
        END { printf "%s %s: %.2f per call:%s\n", b, side, t / N, row }' "$tmp/$side"
    done
  done
  echo "load after: $(load)"
fi

lat() { # BIN POLL -> p50
  local bin=$1 poll=$2 s line
  taskset -c 0 "$bin" rpc_lat -d tcp --poll "$poll" -s 64 -n "$n" -p $port -q >/dev/null 2>&1 &
  s=$!
  sleep 0.3
  line=$(taskset -c 1 "$bin" rpc_lat -d tcp --poll "$poll" -s 64 -n "$n" -p $port -q 127.0.0.1 2>/dev/null | grep '^RESULT' || true)
  wait $s || true
  port=$((port + 1))
  sed -n 's/.* p50_us=\([^ ]*\).*/\1/p' <<<"$line"
}
raw() { # POLL -> p50
  local poll=$1 s line bf=()
  [[ $poll == busy ]] && bf=(--busy)
  taskset -c 0 "$tcp" "${bf[@]}" -s 64 -p $port >/dev/null 2>&1 &
  s=$!
  sleep 0.3
  line=$(taskset -c 1 "$tcp" "${bf[@]}" -s 64 -n "$n" -t 1 -p $port 127.0.0.1 2>/dev/null | grep '^RESULT' || true)
  kill $s 2>/dev/null || true
  wait $s 2>/dev/null || true
  port=$((port + 1))
  sed -n 's/.* p50_us=\([^ ]*\).*/\1/p' <<<"$line"
}
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

if ((do_lat)); then
  for poll in block busy; do
    echo "## rpc_lat 64 B p50 (us), --poll $poll, $rounds rounds of $n calls; load $(load)"
    : >"$tmp/rows"
    for ((k = 0; k < rounds; k++)); do
      row="round $k"
      for b in "${builds[@]}"; do row="$row $(lat "$(perf_of "$b")" "$poll")"; done
      row="$row $(raw "$poll")"
      echo "$row" | tee -a "$tmp/rows"
    done
    cols=${#builds[@]}
    rawm=$(awk -v c=$((cols + 3)) '{ print $c }' "$tmp/rows" | med)
    for ((i = 0; i < cols; i++)); do
      m=$(awk -v c=$((i + 3)) '{ print $c }' "$tmp/rows" | med)
      pr=$(awk -v c=$((i + 3)) -v r=$((cols + 3)) '{ if ($r > 0) print $c / $r }' "$tmp/rows" | med)
      echo "median ${builds[$i]}: rdmx $m us, raw TCP $rawm us, ratio of medians $(ratio "$m" "$rawm"), median of per-round ratios $(printf '%.2f' "$pr")"
    done
    echo "load after: $(load)"
  done
fi

# layers FILE N: self instructions per call of a callgrind profile, by layer
layers() {
  callgrind_annotate --auto=no --threshold=100 "$1" 2>/dev/null | awk -v N="$2" '
    /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1; next }
    /^ *[0-9,]+ \( *[0-9.]+%\)  / {
      n1 = $1
      gsub(",", "", n1)
      f = $0
      sub(/^[^)]*\) +/, "", f)
      if (f ~ /(^|\/)(tests|tools)\//) l = "rest"
      else if (f ~ /providers\/tcp\//) l = "tcp"
      else if (f ~ /(^|\/)engine\//) l = "engine"
      else if (f ~ /(^|\/)chan\//) l = "chan"
      else if (f ~ /(^|\/)rpc\//) l = "rpc"
      else if (f ~ /(^|\/)common\//) l = "common"
      else if (f ~ /libc\.so/) l = "libc"
      else if (f ~ /ld-linux/) l = "ld.so"
      else l = "rest"
      c[l] += n1
    }
    END {
      printf "%.0f per call:", total / N
      n = split("tcp engine chan rpc common libc ld.so rest", order, " ")
      for (i = 1; i <= n; i++) printf " %s %.0f", order[i], c[order[i]] / N
      printf "\n"
    }'
}

if ((do_layers)); then
  command -v valgrind >/dev/null || { echo "wait-path.sh: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
  ln=5000
  echo "## user instructions per round trip (rpc_lat 64 B --poll block, $ln calls + $((ln / 10)) warm-up, callgrind)"
  cg=(valgrind --tool=callgrind -q)
  for b in "${builds[@]}"; do
    p=$(perf_of "$b")
    "${cg[@]}" --callgrind-out-file="$tmp/srv.cg" "$p" rpc_lat -d tcp --poll block -s 64 -n $ln -p $port -q >/dev/null 2>&1 &
    spid=$!
    sleep 3
    "${cg[@]}" --callgrind-out-file="$tmp/cli.cg" "$p" rpc_lat -d tcp --poll block -s 64 -n $ln -p $port -q 127.0.0.1 >/dev/null 2>&1
    wait $spid || true
    port=$((port + 1))
    for side in srv cli; do echo "$b $side: $(layers "$tmp/$side.cg" $((ln + ln / 10)))"; done
  done
  "${cg[@]}" --callgrind-out-file="$tmp/srv.cg" "$tcp" -s 64 -p $port >/dev/null 2>&1 &
  spid=$!
  sleep 2
  "${cg[@]}" --callgrind-out-file="$tmp/cli.cg" "$tcp" -s 64 -n $ln -t 1 -p $port 127.0.0.1 >/dev/null 2>&1
  sleep 0.5
  kill -INT $spid 2>/dev/null || true
  wait $spid 2>/dev/null || true
  for side in srv cli; do echo "raw TCP $side: $(layers "$tmp/$side.cg" $ln)"; done
fi

# gap_run rdmx BIN | raw: one 0.5 s trace of a busy run -> "srv_median cli_median" (us)
gap_run() {
  local kind=$1 bin=${2:-} s c
  if [[ $kind == rdmx ]]; then
    taskset -c 0 "$bin" rpc_lat -d tcp --poll busy -s 64 -n 400000 -p $port -q >/dev/null 2>&1 &
    s=$!
    sleep 0.3
    taskset -c 1 "$bin" rpc_lat -d tcp --poll busy -s 64 -n 400000 -p $port -q 127.0.0.1 >/dev/null 2>&1 &
    c=$!
  else
    taskset -c 0 "$tcp" --busy -s 64 -p $port >/dev/null 2>&1 &
    s=$!
    sleep 0.3
    taskset -c 1 "$tcp" --busy -s 64 -n 400000 -t 1 -p $port 127.0.0.1 >/dev/null 2>&1 &
    c=$!
  fi
  port=$((port + 1))
  sleep 0.4
  perf record -q -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -p "$s,$c" -o "$tmp/gap.data" \
    -- sleep 0.5 >/dev/null 2>&1 || true
  kill "$c" "$s" 2>/dev/null || true
  wait "$c" "$s" 2>/dev/null || true
  # recv/recvfrom/read exits with data, then the thread's next sendmsg/sendto/write
  perf script -i "$tmp/gap.data" --ns -F pid,tid,time,event,trace 2>/dev/null | awk -v S="$s" '
    { split($1, id, "/"); tid = id[2]; t = $2; sub(":", "", t); t *= 1e6 }
    /sys_exit/ { split($0, a, "NR "); split(a[2], b, " = ")
      if ((b[1] == 45 || b[1] == 0 || b[1] == 47) && b[2] + 0 > 0) start[tid] = t; next }
    /sys_enter/ { split($0, a, "NR "); split(a[2], b, " ")
      if ((b[1] == 46 || b[1] == 44 || b[1] == 1) && (tid in start)) {
        print (id[1] == S ? "srv" : "cli"), t - start[tid]; delete start[tid] } }' >"$tmp/gap.rows"
  for side in srv cli; do
    awk -v k=$side '$1 == k { print $2 }' "$tmp/gap.rows" | med
  done | paste -sd' '
}

if ((do_gap)); then
  command -v perf >/dev/null || { echo "wait-path.sh: perf missing (apt-get install linux-perf)" >&2; exit 1; }
  echo "## recv-to-send gap per side (us, medians), busy 64 B, $rounds rounds; load $(load)"
  echo "columns: per build server client, then raw TCP server client"
  : >"$tmp/grows"
  for ((k = 0; k < rounds; k++)); do
    row="round $k"
    for b in "${builds[@]}"; do row="$row $(gap_run rdmx "$(perf_of "$b")")"; done
    row="$row $(gap_run raw)"
    echo "$row" | tee -a "$tmp/grows"
  done
  cols=$((2 * ${#builds[@]} + 2))
  for ((i = 0; i < cols; i++)); do
    printf '%s ' "$(awk -v c=$((i + 3)) '{ print $c }' "$tmp/grows" | med)"
  done | awk -v nb=${#builds[@]} -v names="${builds[*]}" '{
    split(names, bn, " ")
    rs = $(2 * nb + 1); rc = $(2 * nb + 2)
    for (i = 1; i <= nb; i++)
      printf "median %s: server %s us (raw TCP %s, +%.2f), client %s us (raw TCP %s, +%.2f)\n",
        bn[i], $(2 * i - 1), rs, $(2 * i - 1) - rs, $(2 * i), rc, $(2 * i) - rc }'
  echo "load after: $(load)"
fi

# cycles_run rdmx BIN | raw: one busy run under syscall_cycles.so -> its
# "CYCLES ..." lines, server's then client's
cycles_run() {
  local kind=$1 bin=${2:-} so="$build/tests/bench/syscall_cycles.so"
  if [[ $kind == rdmx ]]; then
    LD_PRELOAD=$so taskset -c 0 "$bin" rpc_lat -d tcp --poll busy -s 64 -n "$n" -p $port -q \
      >/dev/null 2>"$tmp/cyc.srv" &
    s=$!
    sleep 0.3
    LD_PRELOAD=$so taskset -c 1 "$bin" rpc_lat -d tcp --poll busy -s 64 -n "$n" -p $port -q \
      127.0.0.1 >/dev/null 2>"$tmp/cyc.cli"
    wait $s || true
  else
    LD_PRELOAD=$so taskset -c 0 "$tcp" --busy -s 64 -p $port >/dev/null 2>"$tmp/cyc.srv" &
    s=$!
    sleep 0.3
    LD_PRELOAD=$so taskset -c 1 "$tcp" --busy -s 64 -n "$n" -t 1 -p $port 127.0.0.1 \
      >/dev/null 2>"$tmp/cyc.cli"
    sleep 0.3
    kill -INT $s 2>/dev/null || true
    wait $s 2>/dev/null || true
  fi
  port=$((port + 1))
  for side in srv cli; do echo "  $side $(grep '^CYCLES' "$tmp/cyc.$side" | tail -1 | cut -d' ' -f2-)"; done
}

if ((do_cycles)); then
  [[ -f $build/tests/bench/syscall_cycles.so ]] ||
    { echo "wait-path.sh: $build/tests/bench/syscall_cycles.so missing (x86-64 test build)" >&2; exit 1; }
  echo "## cycles in the system calls per side (medians; busy 64 B, $n calls), $rounds rounds; load $(load)"
  for ((k = 0; k < rounds; k++)); do
    for b in "${builds[@]}"; do
      echo "round $k $b"
      cycles_run rdmx "$(perf_of "$b")"
    done
    echo "round $k raw TCP"
    cycles_run raw
  done
  echo "load after: $(load)"
fi
