#!/bin/sh
# rdmx-kv serve --data DIR: what a put or delete acknowledged survives
# kill -9. rdmx-bootstrapd and a kv server on DIR; a client session puts
# keys (small values, 64 KiB ones, one of 4 MiB) and deletes one, each
# acknowledged call recorded as its reply line arrives; the server is killed
# (SIGKILL) right after the 200th acknowledged put, mid-load; a new server on
# the same DIR must give back every acknowledged put with its value, keep
# the deleted key deleted, and scan in the same order as the memory store.
# Then: a full LMDB map is a RESOURCE_EXHAUSTED error, the server serves on.
#   persist.sh RDMX_KV RDMX_BOOTSTRAPD RDMX_CERTS
set -eu
KV=$1 BSD=$2 CERTS=$3
. "$(dirname "$0")/../../support/lib.sh"
FAIL_TAIL=40
test_init rdmx-kv-persist
test_pki "$CERTS" kv.test registry.test client.test
TLS="--ca $P/ca.crt --cert $P/client.test.crt --key $P/client.test.key"
start_bootstrapd "$BSD"

# $DIR/data is not there yet: the first server makes it
serve() { # NAME [extra options]: starts a kv server on $DIR/data, sets KV_PID
	name=$1
	shift
	$DEATH "$KV" serve --listen 127.0.0.1:0 --registry "$REG" --registry-name registry.test \
		--service "kv-$name" --data "$DIR/data" --ca "$P/ca.crt" --cert "$P/kv.test.crt" \
		--key "$P/kv.test.key" "$@" >"$DIR/$name.out" 2>"$DIR/$name.log" &
	KV_PID=$!
	PIDS="$PIDS $KV_PID"
	wait_line "$DIR/$name.out" registered
}

# ---- the load, killed in the middle ----
serve first
N=400
i=0
: >"$DIR/load.txt"
while [ $i -lt $N ]; do
	k=$(printf 'k%04d' $i)
	if [ $((i % 50)) -eq 7 ]; then
		echo "put $k --random 64K"
	elif [ $i -eq 120 ]; then
		echo "put $k --random 4M"
	else
		echo "put $k val-$i"
	fi
	case $i in
	10) echo "put k0005 again-5" ;; # an acknowledged overwrite
	20) echo "put gone doomed"; echo "del gone" ;;
	esac
	i=$((i + 1))
done >"$DIR/load.txt"
# lockstep: one command to the client, then its reply line; acknowledged
# puts and deletes are recorded as their reply arrives; right after the
# 200th acknowledged put the server is killed (SIGKILL), and a few more
# commands go to the client, whose calls then fail, unacknowledged
: >"$DIR/acked"
mkfifo "$DIR/cmd" "$DIR/replies"
$DEATH "$KV" --registry "$REG" --registry-name registry.test --service kv-first $TLS \
	--timeout-ms 5000 session - <"$DIR/cmd" >"$DIR/replies" 2>"$DIR/client.log" &
CLIENT_PID=$!
PIDS="$PIDS $CLIENT_PID"
exec 3>"$DIR/cmd" 4<"$DIR/replies"
trap '' PIPE
acks=0 after=-1
while IFS= read -r cmd; do
	echo "$cmd" >&3 || break
	reply=
	while IFS= read -r line <&4; do
		echo "$line" >>"$DIR/client.out"
		case $line in "  put "* | "  del "*) reply=$line; break ;; esac
	done
	[ -n "$reply" ] || break # the client ended
	set -f
	set -- $reply
	set +f
	if [ "$1" = put ] && echo "$reply" | grep -q ' OK '; then
		echo "put $2" >>"$DIR/acked"
		acks=$((acks + 1))
	elif [ "$1" = del ] && [ "$3" = deleted ]; then
		echo "del $2" >>"$DIR/acked"
	fi
	if [ $after -ge 0 ]; then
		after=$((after + 1))
		[ $after -eq 3 ] && break
	elif [ $acks -eq 200 ]; then
		kill -KILL "$KV_PID"
		after=0
	fi
done <"$DIR/load.txt"
exec 3>&-
cat <&4 >>"$DIR/client.out" || true
exec 4<&-
wait "$CLIENT_PID" 2>/dev/null || true
wait "$KV_PID" 2>/dev/null && fail "the first server was not killed"
n_acked=$(grep -c '^put ' "$DIR/acked" || true)
[ "$n_acked" -ge 200 ] || fail "only $n_acked puts acknowledged before the kill"
[ "$n_acked" -lt $((N + 2)) ] || fail "every put was acknowledged: the kill came too late"
grep -qx 'del gone' "$DIR/acked" || fail "the delete was not acknowledged"
grep -qx 'put k0120' "$DIR/acked" || fail "the 4 MiB put was not acknowledged"
grep -q 'FAILED' "$DIR/client.out" || fail "no call failed after the kill"

# ---- a new server on the same folder: every acknowledged call is there ----
serve second
grep -q "store: lmdb in $DIR/data" "$DIR/second.log" || fail "the second server did not open the LMDB store"
KADDR=$(sed -n 's/^registered .*endpoint=\([^ ]*\).*/\1/p' "$DIR/second.out")
KVC="$KV --server $KADDR $TLS --timeout-ms 20000"
{
	grep '^put ' "$DIR/acked" | sort -u | while read -r _ k; do
		i=$(echo "$k" | sed 's/^k0*//; s/^$/0/')
		if [ "$k" = k0005 ]; then
			echo "get $k = again-5"
		elif [ "$k" = gone ]; then
			:
		elif [ $((i % 50)) -eq 7 ]; then
			echo "get $k = --random 64K"
		elif [ "$i" -eq 120 ]; then
			echo "get $k = --random 4M"
		else
			echo "get $k = val-$i"
		fi
	done
	echo "get gone = --missing"
	echo "scan k00 = 100"
	echo "scan k01 = $(grep -c '^put k01' "$DIR/acked")"
} >"$DIR/check.txt"
$KVC session "$DIR/check.txt" >"$DIR/check.out" 2>"$DIR/check.log" ||
	fail "after the restart, an acknowledged put or delete is missing or wrong: $(grep -v ' ok$' "$DIR/check.out" | head -n 5)"
checked=$(grep -c '^  get ' "$DIR/check.out" || true)
# one get per acknowledged key (the deleted one: = --missing)
want=$(grep '^put ' "$DIR/acked" | sort -u | wc -l)
[ "$checked" -eq "$want" ] || fail "checked $checked gets, expected $want"

# scan order and paging: bytewise, the same as the memory store
$KVC scan k000 --keys >"$DIR/scan.txt" || fail "scan k000"
printf 'k0000\nk0001\nk0002\nk0003\nk0004\nk0005\nk0006\nk0007\nk0008\nk0009\n' >"$DIR/scan.want"
cmp -s "$DIR/scan.txt" "$DIR/scan.want" || fail "scan k000 printed $(cat "$DIR/scan.txt")"
$KVC scan k01 --keys --limit 7 >"$DIR/scan2.txt" || fail "scan k01 --limit 7"
[ "$(wc -l <"$DIR/scan2.txt")" -eq "$(grep -c '^put k01' "$DIR/acked")" ] || fail "scan k01 by pages of 7 gave $(wc -l <"$DIR/scan2.txt") keys"
sort -c "$DIR/scan2.txt" 2>/dev/null || fail "scan k01 is not in key order"
kill -TERM "$KV_PID"
wait "$KV_PID" || fail "the second server did not stop cleanly"

# ---- a full map: RESOURCE_EXHAUSTED, and the server serves on ----
rm -rf "$DIR/data" && mkdir "$DIR/data"
serve full --data-max-bytes 1M
KADDR=$(sed -n 's/^registered .*endpoint=\([^ ]*\).*/\1/p' "$DIR/full.out")
KVC="$KV --server $KADDR $TLS --timeout-ms 20000"
head -c 2097152 /dev/zero >"$DIR/two-mib"
$KVC put big --file "$DIR/two-mib" >/dev/null 2>"$DIR/full.err" && fail "a 2 MiB put fit a 1 MiB map"
grep -q 'RESOURCE_EXHAUSTED' "$DIR/full.err" || fail "a full map said: $(cat "$DIR/full.err")"
grep -q 'data-max-bytes' "$DIR/full.err" || fail "a full map said: $(cat "$DIR/full.err")"
grep -q 'MDB_MAP_FULL' "$DIR/full.log" || fail "no log line for the full map"
$KVC put small after >/dev/null || fail "a put after the full map failed"
[ "$($KVC get small)" = after ] || fail "get after the full map"
kill -TERM "$KV_PID"
wait "$KV_PID" || fail "the server did not stop cleanly after a full map"
echo "ok: $n_acked acknowledged puts and 1 delete survived kill -9"
