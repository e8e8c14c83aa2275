#!/usr/bin/env bash
# Fails when a tracked C file or header does not match the repo's
# .clang-format (clang-format --dry-run -Werror), naming each file.
#   scripts/check-format.sh          (from anywhere inside the repo)
# Generated and golden files are left out: rdmx-gen's expected output
# (tests/unit/codegen/golden/) is compared byte for byte, not formatted.
# Fix a failure with: clang-format -i FILE...
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || {
	echo "check-format: clang-format not found (scripts/deps.sh test installs it)"
	exit 77
}
mapfile -t files < <(git ls-files '*.c' '*.h' | grep -v '^tests/unit/codegen/golden/')
# one clang-format run over every file; each finding names its file
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
clang-format --dry-run -Werror "${files[@]}" >/dev/null 2>"$out" || status=$?
mapfile -t bad < <(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' "$out" | sort -u)
if [ "$status" -ne 0 ] && [ "${#bad[@]}" -eq 0 ]; then
	cat "$out"
	echo "check-format: clang-format failed (status $status)"
	exit 1
fi
for f in "${bad[@]}"; do
	echo "check-format: $f is not clean under .clang-format"
done
echo "check-format: ${#files[@]} files checked, ${#bad[@]} not clean"
[ "${#bad[@]}" -eq 0 ]
