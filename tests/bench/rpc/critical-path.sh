#!/usr/bin/env bash
# tests/bench/rpc/critical-path.sh — where a 64 B RPC round trip over the
# tcp provider spends its user-space time, layer by layer, on each side.
#
# It copies the working tree, puts TSC marks into the copy
# (critical_path_marks.py: the checkout is never touched), builds rdmx-perf
# from it, runs `rdmx-perf rpc_lat -d tcp --poll MODE -s 64` (server on core
# $SERVER_CPU, client on $CLIENT_CPU, like run.sh) and prints, per side, the
# TSC cycles and ns from the recv that brought the peer's message to each
# mark (the median over the calls), ending at the sendmsg of the answer
# (server) or of the next call (client). A raw TCP ping-pong spends almost
# nothing between its recv and its send: the table is the difference.
#
#   tests/bench/rpc/critical-path.sh [--build-dir DIR] [-n CALLS] [--repeat R]
#                                    [--poll busy|block]
#   tests/bench/rpc/critical-path.sh --check   (ctest bench-critical-path-marks:
#                                    every mark still finds its place; no build)
#
# DIR (default /tmp/rdmx-critpath) holds the marked copy and its build,
# rebuilt when the working tree changed. R runs (default 3); each row is the
# median of the runs' medians. MODE: busy (default) or block. A mark adds
# ~25 cycles (one rdtsc) to what follows it. Beside the table, the cost of
# one system call here (syscall_cost.c): the scale the path is read
# against. x86-64 only.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/../../.." && pwd)"
dir=/tmp/rdmx-critpath calls=50000 repeat=3 poll=busy check=0
while (($#)); do
  case "$1" in
    --build-dir) dir="$2"; shift ;;
    -n) calls="$2"; shift ;;
    --repeat) repeat="$2"; shift ;;
    --poll) poll="$2"; shift ;;
    --check) check=1 ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "critical-path.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done
if ((check)); then
  tmp="$(mktemp -d /tmp/rdmx-critpath-check-XXXXXX)"
  trap 'rm -rf "$tmp"' EXIT
  cp -r "$src/engine" "$src/chan" "$src/rpc" "$tmp"
  python3 "$here/critical_path_marks.py" "$tmp"
  echo "critical-path.sh: every mark finds its place"
  exit 0
fi
[[ $(uname -m) == x86_64 ]] || { echo "critical-path.sh: x86-64 only (rdtsc)" >&2; exit 2; }
[[ $calls =~ ^[1-9][0-9]*$ && $repeat =~ ^[1-9][0-9]*$ ]] ||
  { echo "critical-path.sh: -n and --repeat want positive numbers" >&2; exit 2; }
[[ $poll == busy || $poll == block ]] || { echo "critical-path.sh: --poll busy or block" >&2; exit 2; }
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

# ---- the marked copy, rebuilt when the tree changed -----------------------
stamp="$(cd "$src" && {
  git rev-parse HEAD
  git diff HEAD
  git ls-files -z --others --exclude-standard | xargs -0 -r sha1sum
} | sha1sum | cut -c1-16)"
if [[ ! -x $dir/build/tools/rdmx-perf/rdmx-perf || $(cat "$dir/stamp" 2>/dev/null) != "$stamp" ]]; then
  echo "critical-path.sh: marking a copy of $src in $dir/src" >&2
  rm -rf "$dir/src"
  mkdir -p "$dir/src"
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$dir/src")
  python3 "$here/critical_path_marks.py" "$dir/src"
  cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRDMX_BUILD_TESTS=ON \
    -DRDMX_WITH_VERBS=OFF >/dev/null
  cmake --build "$dir/build" -j2 --target rdmx-perf syscall_cost >/dev/null
  echo "$stamp" >"$dir/stamp"
fi
perf="$dir/build/tools/rdmx-perf/rdmx-perf"

# ---- runs -------------------------------------------------------------------
tmp="$(mktemp -d /tmp/rdmx-critpath-run-XXXXXX)"
spid=
cleanup() {
  [[ -n $spid ]] && kill "$spid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
port=$((40000 + RANDOM % 10000))
for ((k = 0; k < repeat; k++)); do
  taskset -c "$SERVER_CPU" "$perf" rpc_lat -d tcp --poll "$poll" -s 64 -n "$calls" -p "$port" \
    >/dev/null 2>"$tmp/srv.$k" &
  spid=$!
  sleep 0.3
  taskset -c "$CLIENT_CPU" "$perf" rpc_lat -d tcp --poll "$poll" -s 64 -n "$calls" -p "$port" \
    127.0.0.1 2>"$tmp/cli.$k" | grep '^RESULT' | tee -a "$tmp/results" >&2
  wait "$spid" || true
  spid=
  port=$((port + 1))
done

# ---- the table ----------------------------------------------------------------
names=(
  [1]="tcp: frames parsed, completions queued"
  [2]="tcp: ctx_poll hands the batch out (lock dropped)"
  [3]="engine: the message delivered (a light one, or a receive's completion)"
  [20]="engine: a send completion delivered before the answer (the ack of our last message)"
  [4]="rpc: the channel gave the message to the endpoint"
  [5]="rpc server: request taken (rdmx__rpc_on_request)"
  [6]="rpc server: handler called"
  [7]="rpc server: rdmx_rpc_respond"
  [8]="rpc server: the answer goes to the channel"
  [9]="chan: eager slot filled (write_eager_staged)"
  [10]="chan: post_write"
  [11]="chan: light message or task posted"
  [12]="tcp: post_msg (or post_send)"
  [13]="tcp: tx_flush"
  [14]="tcp: sendmsg (end)"
  [15]="rpc client: response taken (rdmx__rpc_on_response)"
  [16]="rpc client: completion callback called"
  [17]="rpc client: next call (rdmx_rpc_call_async_md)"
)
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
ghz=$(cat "$tmp"/srv.* "$tmp"/cli.* | awk '$1 == "CPMARK" && $2 == "tsc_ghz" { print $3 }' | median)
echo "--poll $poll; TSC $ghz GHz; medians of $repeat runs of $calls calls; cycles and ns since the recv that brought the message"
sc=$("$dir/build/tests/bench/syscall_cost")
null=$(awk '$2 == "getppid" { print $3 }' <<<"$sc")
empty=$(awk '$2 == "recv_empty" { print $3 }' <<<"$sc")
echo "one system call on this machine (tests/bench/rpc/syscall_cost.c): getppid $null cycles, a recv that finds nothing $empty"
for side in srv cli; do
  echo
  if [[ $side == srv ]]; then echo "server: request in -> answer out"; else echo "client: response in -> next call out"; fi
  echo "| mark | where | cycles | ns |"
  echo "|---|---|---|---|"
  order=(1 2 20 3 4 5 6 7 8 15 16 17 9 10 11 12 13 14)
  for m in "${order[@]}"; do
    c=$(cat "$tmp"/$side.* | awk -v m="$m" '$1 == "CPMARK" && $2 == m { print $3 }' | median)
    [[ $c == - ]] && continue
    ns=$(awk -v c="$c" -v g="$ghz" 'BEGIN { printf "%.0f", c / g }')
    echo "| $m | ${names[$m]} | $c | $ns |"
  done
done
