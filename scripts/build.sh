#!/usr/bin/env bash
# Configures and builds rdmx into a build directory.
#   scripts/build.sh DIR [extra cmake args...]
set -euo pipefail
dir=${1:?usage: scripts/build.sh DIR [cmake args]}
shift
cd "$(dirname "$0")/.."
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
