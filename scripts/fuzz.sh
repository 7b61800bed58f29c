#!/usr/bin/env bash
# Runs every native fuzz target in the module for the given time each.
set -euo pipefail
t=${1:-30s}
cd "$(dirname "$0")/.."
for pkg in $(go list ./...); do
	for f in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "== $pkg $f ($t)"
		go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
	done
done
