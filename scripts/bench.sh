#!/usr/bin/env bash
# Runs the shared peer benchmark harness with edgeway added as a peer.
#   scripts/bench.sh peers   HTTP/1.1 req/s, p99, proxy CPU us/req (run-peers.sh), edgeway
#                            also with its access log on, sampled, and tracing (EDGEWAY_VARIANTS);
#                            with TLS to the upstream (edgeway-tlsup beside nginx-tlsup, nginx
#                            proxy_pass https:// with proxy_ssl_session_reuse on; UPSTREAM_TLS=0 skips)
#   scripts/bench.sh idle    memory per idle keep-alive connection (idle-conns.sh)
#   scripts/bench.sh ws      memory per idle WebSocket tunnel, echo latency (ws-conns.sh)
#   scripts/bench.sh h2      HTTP/2 over TLS req/s and CPU per request (h2-peers.sh), edgeway
#                            on x/net's HTTP/2 server and on its own (edgeway-own)
# Installs the peers with apt-get when they are missing. The harness's knobs
# (ROUNDS, DURATION, CONNS, IDLE_NS, ...) pass through from the environment.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench_dir=${BENCH_DIR:-$root/../shared/bench}
bench_dir=$(cd "$bench_dir" && pwd) || { echo "bench harness not found at $bench_dir (set BENCH_DIR)" >&2; exit 1; }

need=()
for c in nginx haproxy caddy wrk h2load curl taskset; do
	command -v "$c" >/dev/null || need+=("$c")
done
if ((${#need[@]})); then
	echo "installing missing peers: ${need[*]}" >&2
	sudo=""; [[ $(id -u) == 0 ]] || sudo=sudo
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		nginx haproxy caddy wrk nghttp2-client curl util-linux iproute2 >/dev/null
fi

[[ -x $root/bin/edgeway ]] || (cd "$root" && make build)
export EDGEWAY_BIN=$root/bin/edgeway
export EXTRA_PROXY="edgeway|8084|$root/scripts/bench-edgeway.sh"
case ${1:-peers} in
peers)
	# edgeway runs once per variant (scripts/bench-edgeway.sh VARIANT),
	# each as a peer of its own: access log off (as the peers), on,
	# sampled, tracing at 1% and 100% to a local OTLP sink on the load
	# side's core, and a rate limit on every request.
	# EDGEWAY_VARIANTS="" runs edgeway alone.
	variants=${EDGEWAY_VARIANTS-log log10 trace1 trace100 limit}
	port=8085
	for v in $variants; do
		EXTRA_PROXY+=$'\n'"edgeway-$v|$port|VARIANT=$v $root/scripts/bench-edgeway.sh"
		port=$((port + 1))
	done
	if [[ ${UPSTREAM_TLS:-1} == 1 ]]; then
		# Two HTTPS origins (internal/benchtools/tlsorigin, answering as
		# the harness's upstreams do) on the load side's core, one
		# certificate for both; edgeway-tlsup and nginx-tlsup proxy to
		# them, verifying it.
		tlsd=$(mktemp -d)
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
			-addext subjectAltName=DNS:localhost -keyout "$tlsd/origin.key" -out "$tlsd/origin.pem" 2>/dev/null
		(cd "$root" && CGO_ENABLED=0 go build -o "$tlsd/tlsorigin" ./internal/benchtools/tlsorigin)
		o1=${TLS_ORIGIN_PORT:-9011}
		taskset -c 1 "$tlsd/tlsorigin" -addr "127.0.0.1:$o1" -id tls1 -cert "$tlsd/origin.pem" -key "$tlsd/origin.key" &
		origin1=$!
		taskset -c 1 "$tlsd/tlsorigin" -addr "127.0.0.1:$((o1 + 1))" -id tls2 -cert "$tlsd/origin.pem" -key "$tlsd/origin.key" &
		origin2=$!
		stop_origins() { kill "$origin1" "$origin2" 2>/dev/null; wait "$origin1" "$origin2" 2>/dev/null; rm -rf "$tlsd"; }
		export TLS_ORIGIN1=127.0.0.1:$o1 TLS_ORIGIN2=127.0.0.1:$((o1 + 1)) TLS_ORIGIN_CA=$tlsd/origin.pem
		EXTRA_PROXY+=$'\n'"edgeway-tlsup|$port|VARIANT=tlsup $root/scripts/bench-edgeway.sh"
		EXTRA_PROXY+=$'\n'"nginx-tlsup|$((port + 1))|$root/scripts/bench-nginx-tlsup.sh"
		variants+=" tlsup"
	fi
	if [[ $variants == *trace* ]]; then
		sink_port=${OTLP_SINK_PORT:-4318}
		(cd "$root" && CGO_ENABLED=0 go build -o "$root/bin/otlpsink" ./internal/benchtools/otlpsink)
		taskset -c 1 "$root/bin/otlpsink" -listen "127.0.0.1:$sink_port" &
		sink=$!
		export OTLP_SINK="http://127.0.0.1:$sink_port"
	fi
	trap '[[ -n ${sink:-} ]] && kill $sink 2>/dev/null; [[ -n ${tlsd:-} ]] && stop_origins' EXIT
	if [[ -n ${PROXIES:-} && $PROXIES == *edgeway* && $PROXIES != *edgeway-* ]]; then
		for v in $variants; do PROXIES+=" edgeway-$v"; done
		[[ -n ${tlsd:-} ]] && PROXIES+=" nginx-tlsup"
	fi
	export PROXIES
	"$bench_dir/run-peers.sh" ;;
idle) exec "$bench_dir/idle-conns.sh" ${IDLE_NS:-10000} ;;
ws)
	port=$(( ${WS_PORT_BASE:-23000} + 84 ))
	export EXTRA_PROXY="edgeway|$port|$root/scripts/bench-edgeway.sh"
	exec "$bench_dir/ws-conns.sh" ${WS_NS:-} ;;
h2)
	# edgeway on each HTTP/2 server: x/net's (the default) and its own
	# (h2_server own, listeners/h2conn).
	export EXTRA_PROXY_H2="edgeway|8444|$root/scripts/bench-edgeway.sh"$'\n'"edgeway-own|8445|H2_SERVER=own $root/scripts/bench-edgeway.sh"
	exec "$bench_dir/h2-peers.sh" ;;
*) echo "usage: $0 peers|idle|ws|h2" >&2; exit 2 ;;
esac
