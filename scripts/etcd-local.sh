# Shared by the etcd tests (tests/integration/etcd) and scripts/demo --etcd: a three-member etcd
# cluster on 127.0.0.1 with mutual TLS (client and peer), certificates from
# rdmx-certs. Source it after setting DIR, CERTS, and DEATH (a command prefix
# that ties a child's life to ours, may be empty); PIDS collects the children.
#   etcd_pki          CA, etcd.test (IP SAN 127.0.0.1) and the given names
#   etcd_cluster_start  ports, three members, healthy (up to three tries)
#   etcd_start I      starts member I (1..3) on the ports picked by etcd_ports
#   etcd_wait_healthy all started members answer (bounded: 20 s)
#   etcd_leader       prints the index (1..3) of the leader
#   etcd_kill I       kill -9 of member I
ETCD_BIN=${ETCD_BIN:-$(command -v etcd || true)}
ETCDCTL_BIN=${ETCDCTL_BIN:-$(command -v etcdctl || true)}

# Six free TCP ports (client + peer per member): random ones not listened on,
# below the kernel's ephemeral range (32768..) that other programs' outgoing
# connections take from.
etcd_ports() {
	used=$(ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://')
	set --
	while [ $# -lt 6 ]; do
		p=$(((RANDOM << 8 | RANDOM) % 12000 + 20000))
		case " $used $* " in *" $p "*) continue ;; esac
		set -- "$@" $p
	done
	ETCD_CPORT1=$1 ETCD_PPORT1=$2 ETCD_CPORT2=$3 ETCD_PPORT2=$4 ETCD_CPORT3=$5 ETCD_PPORT3=$6
	ETCD_URL="etcd://127.0.0.1:$1,127.0.0.1:$3,127.0.0.1:$5"
	ETCD_CLUSTER="m1=https://127.0.0.1:$2,m2=https://127.0.0.1:$4,m3=https://127.0.0.1:$6"
	ETCD_ENDPOINTS="https://127.0.0.1:$1,https://127.0.0.1:$3,https://127.0.0.1:$5"
}

etcd_pki() {
	"$CERTS" init "$DIR/pki" >/dev/null
	"$CERTS" issue "$DIR/pki" etcd.test --san IP:127.0.0.1 >/dev/null
	for n in "$@"; do "$CERTS" issue "$DIR/pki" "$n" >/dev/null; done
}

etcd_start() { # I [state]
	i=$1
	eval c=\$ETCD_CPORT$i p=\$ETCD_PPORT$i
	P=$DIR/pki
	$DEATH "$ETCD_BIN" --name m$i --data-dir "$DIR/etcd$i" \
		--listen-client-urls https://127.0.0.1:$c --advertise-client-urls https://127.0.0.1:$c \
		--listen-peer-urls https://127.0.0.1:$p --initial-advertise-peer-urls https://127.0.0.1:$p \
		--initial-cluster "$ETCD_CLUSTER" --initial-cluster-state "${2:-new}" \
		--initial-cluster-token rdmx-test \
		--client-cert-auth --trusted-ca-file "$P/ca.crt" --cert-file "$P/etcd.test.crt" \
		--key-file "$P/etcd.test.key" \
		--peer-client-cert-auth --peer-trusted-ca-file "$P/ca.crt" \
		--peer-cert-file "$P/etcd.test.crt" --peer-key-file "$P/etcd.test.key" \
		--heartbeat-interval 100 --election-timeout 1000 \
		--logger zap --log-outputs stderr >>"$DIR/etcd$i.log" 2>&1 &
	eval ETCD_PID$i=$!
	PIDS="$PIDS $!"
}

etcdctl_() { # ENDPOINTS args...
	e=$1
	shift
	ETCDCTL_API=3 "$ETCDCTL_BIN" --endpoints "$e" --cacert "$DIR/pki/ca.crt" \
		--cert "$DIR/pki/etcd.test.crt" --key "$DIR/pki/etcd.test.key" \
		--command-timeout 2s --dial-timeout 1s "$@"
}

etcd_wait_healthy() { # [member indexes...]: bounded, 30 s; 1 when one died
	set -- ${@:-1 2 3}
	end=$(($(date +%s) + 30))
	for i in "$@"; do
		eval c=\$ETCD_CPORT$i pid=\$ETCD_PID$i
		until etcdctl_ https://127.0.0.1:$c endpoint health >/dev/null 2>&1; do
			kill -0 "$pid" 2>/dev/null || return 1
			[ "$(date +%s)" -gt $end ] && return 1
			sleep 0.2
		done
	done
	return 0
}

# Ports, three members, healthy: up to three tries on fresh ports (a port
# taken between the pick and the bind makes a member exit at once).
etcd_cluster_start() {
	for try in 1 2 3; do
		etcd_ports
		for i in 1 2 3; do etcd_start $i; done
		etcd_wait_healthy && return 0
		for i in 1 2 3; do eval kill -KILL \$ETCD_PID$i 2>/dev/null || true; done
		wait 2>/dev/null || true
		rm -rf "$DIR/etcd1" "$DIR/etcd2" "$DIR/etcd3"
		echo "etcd: cluster did not start (try $try), new ports" >&2
	done
	return 1
}

etcd_leader() { # [member indexes to ask...]
	set -- ${@:-1 2 3}
	for i in "$@"; do
		eval c=\$ETCD_CPORT$i
		s=$(etcdctl_ https://127.0.0.1:$c endpoint status -w json 2>/dev/null) || continue
		id=$(printf '%s' "$s" | sed -n 's/.*"member_id":\([0-9]*\).*/\1/p')
		leader=$(printf '%s' "$s" | sed -n 's/.*"leader":\([0-9]*\).*/\1/p')
		[ -n "$id" ] && [ "$id" = "$leader" ] && {
			echo "$i"
			return 0
		}
	done
	# not asked the leader itself: find it by id among the others
	for i in "$@"; do
		eval c=\$ETCD_CPORT$i
		s=$(etcdctl_ https://127.0.0.1:$c endpoint status -w json 2>/dev/null) || continue
		leader=$(printf '%s' "$s" | sed -n 's/.*"leader":\([0-9]*\).*/\1/p')
		for j in 1 2 3; do
			eval cj=\$ETCD_CPORT$j
			sj=$(etcdctl_ https://127.0.0.1:$cj endpoint status -w json 2>/dev/null) || continue
			case "$sj" in *"\"member_id\":$leader,"*)
				echo "$j"
				return 0
				;;
			esac
		done
	done
	return 1
}

etcd_kill() { # I: kill -9 member I and reap it (no job notice)
	eval "kill -KILL \$ETCD_PID$1 2>/dev/null; wait \$ETCD_PID$1 2>/dev/null" || true
}
