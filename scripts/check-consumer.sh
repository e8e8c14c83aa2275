#!/usr/bin/env bash
# Builds a tiny program against an installed rdmx, once with find_package(rdmx)
# and once with pkg-config, and runs it.   scripts/check-consumer.sh PREFIX
set -euo pipefail
prefix=${1:?usage: $0 PREFIX}
work=$(mktemp -d /tmp/rdmx-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/main.c" <<'C'
#include <rdmx/rdmx.h>
#include <stdio.h>
int main(void)
{
	size_t n = 0;
	if (rdmx_dev_list(NULL, 0, &n) != 0 || n == 0)
		return 1;
	printf("consumer: %zu device(s), strerror(E_INVAL)=%s\n", n, rdmx_strerror(RDMX_E_INVAL));
	return 0;
}
C
cat >"$work/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(rdmx REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE rdmx::rdmx)
CM
cmake -S "$work" -B "$work/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/b" >/dev/null
LD_LIBRARY_PATH="$prefix/lib" "$work/b/consumer"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" cc -o "$work/pc" "$work/main.c" \
	$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs rdmx)
LD_LIBRARY_PATH="$prefix/lib" "$work/pc"
