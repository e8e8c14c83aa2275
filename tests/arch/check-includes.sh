#!/usr/bin/env bash
# Fails when a source file includes another layer's private header.
#   tests/arch/check-includes.sh [SOURCE_ROOT]      (default: the repo)
#   tests/arch/check-includes.sh --self-test        (the check catches a violation)
#
# Layers are the top folders (common, engine, chan, rpc, secure, ev, codegen,
# tools, services, examples; docs/ARCHITECTURE.md). Every quoted header of a
# layer is private to it, except the interfaces meant for other layers:
#   common/*.h       for every layer (utilities below the engine)
#   chan/chan_rpc.h  for rpc/ and secure/ (the channel's narrow interface)
#   engine/msg.h     for chan/ (light messages: the engine's entry for it)
#   tools/common/*.h for tools/ and services/ (the programs' shared parts)
# Public headers (<rdmx/...>) are everyone's. Tests may include anything.
set -euo pipefail

self_test() {
	local t rc=0
	t=$(mktemp -d)
	trap 'rm -rf "$t"' RETURN
	mkdir -p "$t/chan" "$t/rpc" "$t/common"
	printf '#include "common/log.h"\n' >"$t/chan/ok.c"
	printf 'int x;\n' >"$t/chan/chan_internal.h" >"$t/chan/chan_rpc.h" >"$t/common/log.h"
	printf '#include "chan/chan_rpc.h"\n' >"$t/rpc/ok.c"
	"$0" "$t" >/dev/null || { echo "check-includes: self-test: a clean tree failed"; return 1; }
	printf '#include "chan/chan_internal.h"\n' >"$t/rpc/bad.c"
	"$0" "$t" >/dev/null 2>&1 && rc=1
	[ "$rc" -eq 0 ] || { echo "check-includes: self-test: rpc/ including chan/chan_internal.h passed"; return 1; }
	printf '#include "../chan/chan_internal.h"\n' >"$t/rpc/bad.c"
	"$0" "$t" >/dev/null 2>&1 && rc=1
	[ "$rc" -eq 0 ] || { echo "check-includes: self-test: a ../ path to a private header passed"; return 1; }
	echo "check-includes: self-test passed"
}

if [ "${1:-}" = "--self-test" ]; then
	self_test
	exit
fi

root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
layers=(common engine chan rpc secure ev codegen tools services examples)
search=(tools/common services)

allowed() { # $1 = including layer, $2 = header path from the root
	case "$2" in
	common/*.h) return 0 ;;
	chan/chan_rpc.h) [ "$1" = rpc ] || [ "$1" = secure ] ;;
	engine/msg.h) [ "$1" = chan ] ;;
	tools/common/*.h) [ "$1" = tools ] || [ "$1" = services ] ;;
	*) return 1 ;;
	esac
}

bad=0 files=0
for layer in "${layers[@]}"; do
	[ -d "$root/$layer" ] || continue
	while IFS= read -r -d '' f; do
		files=$((files + 1))
		rel=${f#"$root"/}
		dir=$(dirname "$f")
		while IFS= read -r inc; do
			target=""
			for base in "$dir" "$root" "${search[@]/#/$root/}"; do
				if [ -f "$base/$inc" ]; then
					target=$(realpath -m "$base/$inc")
					break
				fi
			done
			[ -n "$target" ] || continue # generated (kv.rdmx.h, ...)
			trel=${target#"$root"/}
			tlayer=${trel%%/*}
			[ "$tlayer" = "$layer" ] && ! [[ "$trel" == tools/common/* && "$layer" != tools ]] && continue
			allowed "$layer" "$trel" && continue
			echo "check-includes: $rel includes $trel, a private header of $tlayer/"
			bad=$((bad + 1))
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
	done < <(find "$root/$layer" -name '*.[ch]' -print0)
done
echo "check-includes: $files files, $bad includes of another layer's private header"
[ "$bad" -eq 0 ]
