#!/usr/bin/env bash
# Installs the Debian 12 packages rdmx needs that are missing. Idempotent.
#   scripts/deps.sh build   libraries and tools to build rdmx and run the demo
#   scripts/deps.sh test    + test tools (Criterion, clang for fuzzing, openssl CLI)
#   scripts/deps.sh bench   + benchmark anchors (protobuf-c, gRPC, UCX)
# The Soft-RoCE guest's packages are installed by tests/vm/lib.sh (vm_install_deps).
set -euo pipefail

build_pkgs=(build-essential cmake pkg-config git libibverbs-dev librdmacm-dev rdma-core
	ibverbs-utils libssl-dev openssl libmsgpack-dev libev-dev libsystemd-dev scdoc libmicrohttpd-dev
	protobuf-compiler libprotobuf-dev libprotoc-dev libprotobuf-c-dev protobuf-c-compiler
	libjansson-dev liblmdb-dev libcurl4-openssl-dev)
test_pkgs=(libcriterion-dev clang clang-format libclang-rt-14-dev iproute2 procps dpkg-dev file systemd curl util-linux etcd-server etcd-client python3)
bench_pkgs=(libprotobuf-c-dev protobuf-c-compiler libgrpc++-dev protobuf-compiler-grpc
	libprotobuf-dev protobuf-compiler ucx-utils perftest strace)

want=("${build_pkgs[@]}")
case "${1:-build}" in
build) ;;
test) want+=("${test_pkgs[@]}") ;;
bench) want+=("${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
*) echo "usage: $0 build|test|bench" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: not root: install these packages first: ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
