#!/bin/sh
# Private key files that group or others can read are refused by every
# program that takes --key, with a line naming the file and the mode, unless
# --allow-insecure-key is given; rdmx-certs writes keys 0600 whatever the umask.
#   keymode.sh RDMX_KV RDMX_BOOTSTRAPD RDMX_REGISTRY RDMX_CALL RDMX_CERTS
set -eu
KV=$1 BSD=$2 REG=$3 CALL=$4 CERTS=$5
. "$(dirname "$0")/../../support/lib.sh"
test_init rdmx-keymode
FAIL_ALL=1 # the programs' lines are in *.err
unset RDMX_CA RDMX_CERT RDMX_KEY RDMX_REGISTRY || true

# rdmx-certs: 0600 keys even under umask 000, and on --force over a 0644 file
(umask 000 && "$CERTS" init "$DIR/pki" >/dev/null && "$CERTS" issue "$DIR/pki" kv.test >/dev/null) ||
	fail "rdmx-certs"
for k in ca kv.test; do
	m=$(stat -c %a "$DIR/pki/$k.key")
	[ "$m" = 600 ] || fail "rdmx-certs wrote $k.key with mode $m"
done
chmod 644 "$DIR/pki/kv.test.key"
"$CERTS" issue "$DIR/pki" kv.test --force >/dev/null || fail "rdmx-certs issue --force"
m=$(stat -c %a "$DIR/pki/kv.test.key")
[ "$m" = 600 ] || fail "rdmx-certs --force left kv.test.key with mode $m"

# rdmx-certs refuses to read a ca.key group or others can read
chmod 0644 "$DIR/pki/ca.key"
rc=0
"$CERTS" issue "$DIR/pki" other.test >/dev/null 2>"$DIR/rdmx-certs.err" || rc=$?
[ $rc -ne 0 ] || fail "rdmx-certs issue read a 0644 ca.key"
grep -qxF "rdmx-certs: private key $DIR/pki/ca.key is readable by group or others (mode 0644); chmod 600 it, or pass --allow-insecure-key" \
	"$DIR/rdmx-certs.err" || fail "rdmx-certs: no line naming ca.key and its mode"
[ ! -e "$DIR/pki/other.test.key" ] || fail "rdmx-certs wrote other.test.key with a refused CA"
"$CERTS" issue "$DIR/pki" other.test --allow-insecure-key >/dev/null 2>"$DIR/rdmx-certs.err" ||
	fail "rdmx-certs issue --allow-insecure-key"
chmod 0600 "$DIR/pki/ca.key"

CA=$DIR/pki/ca.crt CRT=$DIR/pki/kv.test.crt KEY=$DIR/pki/kv.test.key
TLS="--ca $CA --cert $CRT --key $KEY"

# expect_refused NAME MODE CMD...: exits non-zero with the line
expect_refused() {
	name=$1 mode=$2
	shift 2
	chmod "$mode" "$KEY"
	rc=0
	"$@" </dev/null >"$DIR/$name.out" 2>"$DIR/$name.err" || rc=$?
	[ $rc -ne 0 ] || fail "$name started with a $mode key"
	want="$name: private key $KEY is readable by group or others (mode $mode); chmod 600 it, or pass --allow-insecure-key"
	grep -qxF "$want" "$DIR/$name.err" || fail "$name: no line '$want'"
}

# serve_starts WHAT [ARGS...]: rdmx-kv serve (with ARGS) says it is listening,
# then is stopped; its first stdout line comes through the fifo $DIR/out
serve_starts() {
	what=$1
	shift
	$DEATH "$KV" serve --listen 127.0.0.1:0 $TLS "$@" >"$DIR/out" 2>"$DIR/kv.err" &
	PIDS=$!
	exec 3<"$DIR/out"
	line=
	read -r line <&3 || true
	exec 3<&-
	case $line in
	listening\ *) ;;
	*) fail "$what did not start (first line '$line')" ;;
	esac
	kill "$PIDS"
	wait "$PIDS" 2>/dev/null || true
	PIDS=
}

expect_refused rdmx-kv 0644 $DEATH "$KV" serve --listen 127.0.0.1:0 $TLS
expect_refused rdmx-kv 0640 $DEATH "$KV" serve --listen 127.0.0.1:0 $TLS
expect_refused rdmx-kv 0644 $DEATH "$KV" --server 127.0.0.1:1 $TLS get k
expect_refused rdmx-bootstrapd 0644 $DEATH "$BSD" --listen 127.0.0.1:0 $TLS
expect_refused rdmx-registry 0644 $DEATH "$REG" --server 127.0.0.1:1 $TLS list
expect_refused rdmx-call 0644 $DEATH "$CALL" $TLS --timeout-ms 2000 127.0.0.1:1 list

# --allow-insecure-key: rdmx-kv serve starts with the 0644 key. Its first
# stdout line is read through a fifo: a blocking read, no polling.
chmod 0644 "$KEY"
mkfifo "$DIR/out"
serve_starts "rdmx-kv serve --allow-insecure-key" --allow-insecure-key
grep -q "readable by group or others" "$DIR/kv.err" || fail "the accepted 0644 key is not logged"
# and 0600 starts without the option
chmod 0600 "$KEY"
serve_starts "rdmx-kv serve with a 0600 key"
echo "ok: key modes"
