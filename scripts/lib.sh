# shellcheck shell=bash
# Helpers the project's bench scripts share; source it after `set -euo
# pipefail`:
#
#   . "$(dirname "$0")/lib.sh"
#
# It makes $tmp, a temporary folder removed at exit, and $pids, the
# processes to stop at exit (append each one started in the background:
# pids+=($!)); each is stopped by its PID, never by name, so nothing else
# on the machine is touched. log prints a timestamped line to stderr;
# need exits with a clear message when a command is missing.
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
need() {
	for c in "$@"; do
		command -v "$c" >/dev/null || {
			echo "$(basename "$0"): $c not found (.ci/run lists what to install)" >&2
			exit 1
		}
	done
}
