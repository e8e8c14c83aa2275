# tests/bench/tcp/pair_lib.sh — sourced by budget.sh and paired.sh: their
# command line, and running a busy ping-pong pair on loopback (server on core
# 0, client on core 1) and reading its p50. The sourcing script sets the EXIT
# trap that kills $spid.

# pair_args HELP_LINES ARGS...: parses the scripts' common command line,
# [BUILD_DIR] [--rounds R] [-n N] [--compare OTHER_BUILD_DIR], and --work
# "W1 W2 ..." when the caller set works, into build, rounds, calls, other and
# works (the caller sets their defaults first); -h/--help prints lines
# HELP_LINES (sed's "2,16") of the script's header. Then checks the programs
# both scripts run and sets echo_bin, lat_bin and perf.
pair_args() {
  local help="$1" me="${0##*/}"
  shift
  while (($#)); do
    case "$1" in
      --rounds) rounds="$2"; shift ;;
      -n) calls="$2"; shift ;;
      --work)
        [[ -n ${works+set} ]] || { echo "$me: unknown option $1 (--help)" >&2; exit 2; }
        works="$2"; shift ;;
      --compare) other="$2"; shift ;;
      -h | --help) sed -n "${help}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
      -*) echo "$me: unknown option $1 (--help)" >&2; exit 2 ;;
      *) build="$1" ;;
    esac
    shift
  done
  echo_bin="$build/tests/bench/tcp_echo"
  lat_bin="$build/tests/bench/tcp_lat"
  perf="$build/tools/rdmx-perf/rdmx-perf"
  [[ -x $echo_bin && -x $perf && -x $lat_bin ]] ||
    { echo "$me: build tcp_echo, tcp_lat and rdmx-perf in $build" >&2; exit 2; }
  [[ -z $other || -x $other/tools/rdmx-perf/rdmx-perf ]] || { echo "$me: no rdmx-perf in $other" >&2; exit 2; }
}

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
