#!/usr/bin/env bash
# HTTP/3 beside HTTP/2 on one proxy core.
#
# usage: scripts/bench-h3.sh
#
# edgeway runs pinned to CPU 0 (GOMAXPROCS=1) with one TLS listener that
# serves h2 and h3 (a self-signed certificate made at start, the same for
# both) in front of a trivial upstream (../shared/bench's `upstream`, a
# net/http server answering a small body, on CPU 1). The load generator
# runs on CPU 1: h2load -c16 -m16 for HTTP/2 over TLS, and
# internal/benchtools/h3load (quic-go; Debian's h2load has no HTTP/3) with
# H3_CONNS connections of H3_STREAMS requests in flight for HTTP/3, each
# for DURATION seconds, ROUNDS rounds alternating; medians are reported.
# Proxy CPU per request is edgeway's utime+stime (/proc/PID/stat) over the
# run divided by the requests served. Every process started here is
# stopped by its PID.
#
# Caddy (which serves HTTP/3 with quic-go too) runs the same way as the
# peer, when it is installed (CADDY=0 skips it).
#
# Env: DURATION=10 ROUNDS=3 H3_CONNS=16 H3_STREAMS=16 PORT=9550 UP_PORT=9551
#      CADDY_PORT=9552 CADDY=1
#      BENCH_DIR=../shared/bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-$root/../shared/bench}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
H3_CONNS=${H3_CONNS:-16}
H3_STREAMS=${H3_STREAMS:-16}
PORT=${PORT:-9550}
UP_PORT=${UP_PORT:-9551}
CADDY_PORT=${CADDY_PORT:-9552}
. "$root/scripts/lib.sh"

need h2load taskset
log "building edgeway, h3load and the upstream"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/" ./cmd/edgeway ./internal/benchtools/h3load)
(cd "$BENCH_DIR" && CGO_ENABLED=0 go build -o "$tmp/" ./cmd/upstream)

taskset -c 1 "$tmp/upstream" -addr "127.0.0.1:$UP_PORT" >"$tmp/upstream.log" 2>&1 &
pids+=($!)
mkdir -p "$tmp/conf"
cat >"$tmp/conf/edgeway.conf" <<CONF
log { access off; level warn }
tls { self_signed localhost }
listen bench {
  addr 127.0.0.1:$PORT
  protocols tls h2 h3
  max_conns 0
}
upstream up { server 127.0.0.1:$UP_PORT }
route all {
  match PathPrefix(\`/\`)
  to up
}
CONF
GOMAXPROCS=1 taskset -c 0 "$tmp/edgeway" run -c "$tmp/conf/edgeway.conf" >"$tmp/edgeway.log" 2>&1 &
epid=$!
pids+=("$epid")
# wait_up PORT LOG: waits up to 15 s for an answer over TLS on PORT;
# prints LOG and fails when none comes.
wait_up() {
	for _ in $(seq 150); do
		curl -ks --max-time 1 -o /dev/null "https://127.0.0.1:$1/" && return
		sleep 0.1
	done
	curl -ksf --max-time 2 -o /dev/null "https://127.0.0.1:$1/" || { cat "$2" >&2; exit 1; }
}
wait_up "$PORT" "$tmp/edgeway.log"

# Caddy, the peer that serves HTTP/3 (quic-go as well), on the same core
# with the same upstream and a certificate made here.
CADDY=${CADDY:-1}
cpid=""
if [[ $CADDY == 1 ]] && command -v caddy >/dev/null && command -v openssl >/dev/null; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
		-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$tmp/caddy.key" -out "$tmp/caddy.crt" 2>/dev/null
	cat >"$tmp/Caddyfile" <<CADDY
{
	admin off
	auto_https off
	skip_install_trust
	servers {
		protocols h1 h2 h3
	}
}
https://:$CADDY_PORT {
	bind 127.0.0.1
	tls $tmp/caddy.crt $tmp/caddy.key
	reverse_proxy 127.0.0.1:$UP_PORT
}
CADDY
	GOMAXPROCS=1 XDG_CONFIG_HOME="$tmp/xdg-config" XDG_DATA_HOME="$tmp/xdg-data" HOME="$tmp" \
		taskset -c 0 caddy run --config "$tmp/Caddyfile" --adapter caddyfile >"$tmp/caddy.log" 2>&1 &
	cpid=$!
	pids+=("$cpid")
	wait_up "$CADDY_PORT" "$tmp/caddy.log"
else
	log "caddy (or openssl) not found, or CADDY=0: edgeway only"
fi

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# run_one PID PORT PROTO: prints "reqs/s cpu_us_per_req"
run_one() {
	local pid=$1 port=$2 proto=$3 before after reqs secs
	before=$(cpu_ticks "$pid")
	if [[ $proto == h2 ]]; then
		out=$(taskset -c 1 h2load -c16 -m16 -D "$DURATION" "https://127.0.0.1:$port/" 2>&1)
		reqs=$(awk '/^requests:/ {print $8}' <<<"$out")
		secs=$DURATION
	else
		out=$(GOMAXPROCS=1 taskset -c 1 "$tmp/h3load" -url "https://127.0.0.1:$port/" -c "$H3_CONNS" -m "$H3_STREAMS" -d "${DURATION}s")
		reqs=$(awk '{print $2}' <<<"$out")
		secs=$(awk '{print $6}' <<<"$out")
	fi
	after=$(cpu_ticks "$pid")
	awk -v r="$reqs" -v s="$secs" -v t=$((after - before)) -v hz="$hz" \
		'BEGIN { printf "%.0f %.1f\n", r / s, (r > 0 ? t / hz * 1e6 / r : 0) }'
}

median() { sort -n | awk 'NF {a[++n] = $1} END {print a[int((n + 1) / 2)]}'; }
targets=("edgeway $epid $PORT")
[[ -n $cpid ]] && targets+=("caddy $cpid $CADDY_PORT")
declare -A rps cpu
for round in $(seq "$ROUNDS"); do
	for t in "${targets[@]}"; do
		read -r name pid port <<<"$t"
		for proto in h2 h3; do
			read -r r c < <(run_one "$pid" "$port" "$proto")
			log "round $round $name $proto: $r req/s, $c µs CPU/req"
			rps[$name $proto]+="$r"$'\n'
			cpu[$name $proto]+="$c"$'\n'
		done
	done
done
echo
echo "| proxy, 1 core (GOMAXPROCS=1, CPU 0) | protocol | req/s | proxy CPU µs/req |"
echo "|---|---|---:|---:|"
for t in "${targets[@]}"; do
	read -r name _ _ <<<"$t"
	echo "| $name | HTTP/2 over TLS (h2load -c16 -m16) | $(median <<<"${rps[$name h2]}") | $(median <<<"${cpu[$name h2]}") |"
	echo "| $name | HTTP/3 over QUIC (h3load -c$H3_CONNS -m$H3_STREAMS) | $(median <<<"${rps[$name h3]}") | $(median <<<"${cpu[$name h3]}") |"
done
