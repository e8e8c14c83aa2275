#!/usr/bin/env bash
# Every code block of docs/*.md announced by
#   <!-- snippet: PATH TAG -->
# must be, line for line, the text between the two "/* [TAG] */" lines of
# PATH (a file that the build compiles), so the guide's code compiles.
#   tests/arch/check-doc-snippets.sh SOURCE_DIR
set -euo pipefail
root=${1:?usage: $0 SOURCE_DIR}
bad=0
checked=0
for doc in "$root"/docs/*.md; do
	while IFS=' ' read -r line path tag; do
		src="$root/$path"
		if [ ! -f "$src" ]; then
			echo "check-doc-snippets: $doc:$line: no file $path"
			bad=$((bad + 1))
			continue
		fi
		want=$(awk -v t="/* [$tag] */" 'index($0, t) { n++; next } n == 1' "$src")
		got=$(awk -v l="$line" 'NR > l + 1 && /^```/ { exit } NR > l + 1' "$doc")
		if [ -z "$want" ] || [ "$want" != "$got" ]; then
			echo "check-doc-snippets: $doc:$line: block differs from $path [$tag]"
			bad=$((bad + 1))
		fi
		checked=$((checked + 1))
	done < <(awk '/^<!-- snippet: / { print NR, $3, $4 }' "$doc")
done
echo "check-doc-snippets: $checked snippets checked, $bad wrong"
[ "$bad" -eq 0 ]
