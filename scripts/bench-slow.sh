#!/usr/bin/env bash
# Slow clients beside the peers (issue 22): per proxy (nginx, HAProxy,
# edgeway), good keep-alive clients run alone (baseline), then again while
# ATTACKERS slow connections hold the proxy (a third slowloris, a third
# slow uploaders, a third slow readers of a 1 MiB answer; see
# scripts/bench-slow-attack.py). Reports the good clients' req/s and p99
# under attack against their own baseline, the upstream connections opened
# during the attack and established at its end, the proxy's RSS per
# attacker, kernel TCP memory, and how many attackers of each kind the
# proxy cut, and when.
#
# The shared harness (../shared/bench, read-only) provides the origins,
# the peers' configs and the pinning: the proxy on CPU 0, wrk, the
# attackers and the origins on CPU 1. Knobs: ATTACKERS=8000 GOOD_CONNS=16
# DURATION=10 (s per wrk run) SETTLE=15 (s from the attackers' connecting
# to the measure) PROXIES="nginx haproxy edgeway".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench_dir=${BENCH_DIR:-$root/../shared/bench}
ATTACKERS=${ATTACKERS:-8000} GOOD_CONNS=${GOOD_CONNS:-16} DURATION=${DURATION:-10} SETTLE=${SETTLE:-15}
export UPSTREAM_IMPL=${UPSTREAM_IMPL:-nethttp} # it reads request bodies
# shellcheck source=/dev/null
source "$bench_dir/lib.sh"
[[ -x $root/bin/edgeway ]] || (cd "$root" && make build)
export EDGEWAY_BIN=$root/bin/edgeway
parse_extras "edgeway|8084|$root/scripts/bench-edgeway.sh"
bench_init wrk python3
start_upstreams

# tcp_mem_kib: the kernel's TCP buffer memory now (/proc/net/sockstat pages).
tcp_mem_kib() { awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1) * 4 }' /proc/net/sockstat; }
# up_established: connections established to the origins now (idle pooled
# ones too); up_writing: those whose origin still has answer bytes the
# proxy has not taken (Send-Q > 0): origins held by a slow reader.
up_established() { ss -Htn state established "( sport = :$UP1_PORT or sport = :$UP2_PORT )" | wc -l; }
up_writing() { ss -Htn state established "( sport = :$UP1_PORT or sport = :$UP2_PORT )" | awk '$2 > 0' | wc -l; }
# good URL: req/s and p99 (ms) of GOOD_CONNS keep-alive clients.
good() {
	local out
	out=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$GOOD_CONNS" -d"${DURATION}s" --latency "$1" 2>&1)
	awk '/Requests\/sec/ { r = $2 } $1 == "99%" { p = $2 } END { print r, p }' <<<"$out"
}

results="$BENCH_TMP/slow.tsv"
printf 'proxy\tbase_rps\tbase_p99\tattack_rps\tratio\tattack_p99\tup_conns_opened\tup_established\tup_writing\trss_per_attacker_B\ttcp_mem_KiB\tcuts\n' >"$results"
for name in ${PROXIES:-nginx haproxy edgeway}; do
	log "$name: starting"
	start_proxy "$name" h1 || continue
	url=$(proxy_url "$name" h1)
	port=$(proxy_port "$name" h1)
	read -r base_rps base_p99 < <(good "$url")
	rss0=$(rss_kb "$PROXY_PID")
	conns0=$(upstream_conns)
	ready="$BENCH_TMP/$name.ready" report="$BENCH_TMP/$name.report"
	taskset -c "$LOAD_CPU" python3 "$root/scripts/bench-slow-attack.py" 127.0.0.1 "$port" "$ATTACKERS" "$ready" "$report" &
	atk=$!
	STARTED_PIDS+=("$atk")
	for ((i = 0; i < 600; i++)); do
		[[ -s $ready ]] && break
		sleep 0.1
	done
	log "$name: $(cat "$ready" 2>/dev/null || echo 0) attackers connected; settling ${SETTLE}s"
	sleep "$SETTLE"
	read -r atk_rps atk_p99 < <(good "$url")
	rss1=$(rss_kb "$PROXY_PID")
	conns1=$(upstream_conns)
	est=$(up_established)
	writing=$(up_writing)
	tcpmem=$(tcp_mem_kib)
	kill -TERM "$atk" 2>/dev/null || true
	wait "$atk" 2>/dev/null || true
	forget_pid "$atk"
	cuts=$(tr '\n' ' ' <"$report" 2>/dev/null || echo "-")
	ratio=$(awk -v a="$atk_rps" -v b="$base_rps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
	per=$(awk -v a="$rss1" -v b="$rss0" -v n="$ATTACKERS" 'BEGIN { printf "%d", (a - b) * 1024 / n }')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$base_rps" "$base_p99" "$atk_rps" "$ratio" "$atk_p99" \
		$((conns1 - conns0 - 2)) "$est" "$writing" "$per" "$tcpmem" "$cuts" >>"$results"
	stop_proxy
done
echo
echo "# bench-slow: $ATTACKERS attackers, $GOOD_CONNS good clients, ${DURATION}s per run (proxy on CPU $PROXY_CPU)"
column -t -s $'\t' "$results"
out=${RESULTS_DIR:-${TMPDIR:-/tmp}/edgeway-bench-results}/slow-$(date +%Y%m%d-%H%M%S).tsv
mkdir -p "$(dirname "$out")" && cp "$results" "$out" && echo "saved $out"
