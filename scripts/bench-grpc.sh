#!/usr/bin/env bash
# gRPC unary calls through a proxy on one core (issue 19): edgeway beside
# nginx `grpc_pass` and HAProxy `proto h2`, in the same run.
#
# The origin is grpc-go serving internal/testgrpc's echo service over h2c
# (internal/benchtools/grpcload -mode origin); the load is grpc-go too
# (grpcload -mode load: WORKERS callers, one call at a time each, over
# CHANNELS connections, SIZE-byte messages echoed back, DURATION seconds),
# as ghz would run it. The client speaks h2c to every proxy (prior
# knowledge, as grpc-go does without TLS), and each proxy speaks h2c to
# the origin: edgeway a listener with `protocols http1 h2c` (its own
# HTTP/2 server, the default) and an upstream with `protocol h2c`; nginx
# `listen ... http2` and `grpc_pass grpc://` with keepalive; HAProxy
# `bind ... proto h2` and `server ... proto h2`. The proxy runs pinned to
# CPU 0 (edgeway GOMAXPROCS=1, nginx one worker, HAProxy nbthread 1); the
# client and the origin share CPU 1. CPU per call is the proxy's
# utime+stime (/proc/PID/stat, nginx's worker included) over the measured
# run divided by the calls the client counted; a 2 s warm-up run comes
# first. Configurations go to a temp folder, everything listens on
# 127.0.0.1, ports PORT..PORT+3, every process started here is stopped by
# its PID.
#
# Env: DURATION=10 WORKERS=8 CHANNELS=1 SIZE=64 WINDOW=0 (grpc-go's BDP
# estimation, on by default; a size such as 1048576 fixes the windows and
# turns its PINGs off) PORT=27000 (27000-27999
# is this script's range) PROXIES="edgeway nginx haproxy direct" (direct:
# the client against the origin, no proxy, for scale)
# ROUNDS=1: the proxies run that many times over, in turn, a row each
# (the spread between rounds is the machine's noise).
# EDGEWAY_UPSTREAM: lines added to edgeway's upstream block.
# EDGEWAY_BASE=PATH: also run that edgeway binary as `edgeway-base` (a
# before/after comparison in one run).
# SYSCALLS=1: the proxy's sending (write, writev, sendto, sendmsg) and
# receiving (read, readv, recvfrom, recvmsg) system calls per call
# (perf stat on its processes during the measured run; steadier than CPU
# on a busy machine).
# PROFILE=1: after the measured runs, a perf profile of edgeway under the
# same load (perf record -g on its PID), its top symbols printed;
# PERF_DATA=PATH keeps the recording there (perf report -i PATH).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-10} WORKERS=${WORKERS:-8} CHANNELS=${CHANNELS:-1} SIZE=${SIZE:-64}
PORT=${PORT:-27000}
ORIGIN=$PORT EDGE=$((PORT + 1)) NGINX=$((PORT + 2)) HAPROXY=$((PORT + 3))
PROXIES=${PROXIES:-edgeway nginx haproxy direct}
[[ -n ${EDGEWAY_BASE:-} ]] && PROXIES="edgeway-base $PROXIES"
. "$root/scripts/lib.sh"
need go taskset
chmod 755 "$tmp" # nginx's worker runs as another user
tck=$(getconf CLK_TCK)

log "building edgeway and grpcload"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/edgeway" ./cmd/edgeway &&
	go build -o "$tmp/grpcload" ./internal/benchtools/grpcload)

taskset -c 1 "$tmp/grpcload" -mode origin -listen "127.0.0.1:$ORIGIN" >"$tmp/origin.out" &
pids+=($!)

# wait_call PORT: until a gRPC call through PORT succeeds, at most 10 s.
wait_call() {
	for _ in $(seq 1 100); do
		"$tmp/grpcload" -mode load -addr "127.0.0.1:$1" -workers 1 -d 1ms -timeout 1s >/dev/null 2>&1 && return 0
		sleep 0.1 # polling interval
	done
	echo "no gRPC call succeeds through port $1" >&2
	return 1
}
wait_call "$ORIGIN"

# cpu_of PID...: utime+stime in clock ticks of the processes.
cpu_of() {
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo $t
}

# loadrun PORT SECONDS: the RESULT line of a load run against PORT.
loadrun() {
	taskset -c 1 "$tmp/grpcload" -mode load -addr "127.0.0.1:$1" -workers "$WORKERS" \
		-channels "$CHANNELS" -size "$SIZE" -window "${WINDOW:-0}" -d "${2}s"
}

# field LINE NAME: NAME's value in a RESULT line.
field() { tr ' ' '\n' <<<"$1" | awk -v k="$2" '{ i = index($0, "=") } i && substr($0, 1, i - 1) == k { print substr($0, i + 1) }'; }

results="$tmp/grpc.tsv"
printf 'proxy\tcalls/s\tp50_ms\tp99_ms\terrors\tproxy_CPU_us/call\tsend/recv_syscalls_per_call\n' >"$results"

# measure NAME PORT PID...: warm-up, then the measured run.
measure() {
	local name=$1 port=$2 before after out cpu
	shift 2
	loadrun "$port" 2 >/dev/null
	local stat=""
	if [[ -n ${SYSCALLS:-} && $# -gt 0 ]]; then
		stat="$tmp/$name.stat"
		perf stat -x, -o "$stat" -e syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg \
			-e syscalls:sys_enter_read,syscalls:sys_enter_readv,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg \
			-p "$(tr ' ' , <<<"$*")" -- sleep "$DURATION" 2>/dev/null &
		local st=$!
	fi
	before=$(cpu_of "$@")
	out=$(loadrun "$port" "$DURATION")
	after=$(cpu_of "$@")
	cpu=- sys=-
	if [[ $# -gt 0 ]]; then
		cpu=$(awk -v c=$((after - before)) -v n="$(field "$out" calls)" -v t="$tck" 'BEGIN { printf "%.1f", (n > 0 ? c / t * 1e6 / n : 0) }')
	fi
	if [[ -n $stat ]]; then
		wait "$st" || true
		# writes/reads per call; perf counts over its own DURATION window.
		sys=$(awk -F, -v n="$(field "$out" calls)" '$3 ~ /write|send/ { w += $1 } $3 ~ /read|recv/ { r += $1 }
			END { printf "%.2f/%.2f", (n > 0 ? w / n : 0), (n > 0 ? r / n : 0) }' "$stat")
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(field "$out" calls_per_sec)" "$(field "$out" p50_ms)" \
		"$(field "$out" p99_ms)" "$(field "$out" errors)" "$cpu" "$sys" >>"$results"
	[[ $out == *first_error=* ]] && log "$name: $(field "$out" first_error)"
	return 0
}

# edgeway_start BIN NAME: edgeway on EDGE, CPU 0; sets ppid.
edgeway_start() {
	mkdir -p "$tmp/run-$2"
	cat >"$tmp/run-$2/edgeway.conf" <<CONF
log { access off; level warn }
listen bench {
  addr 127.0.0.1:$EDGE
  protocols http1 h2c
  idle_timeout 300s
  max_conns 0
}
upstream origin {
  server 127.0.0.1:$ORIGIN
  protocol h2c
  idle_timeout 300s
  ${EDGEWAY_UPSTREAM:-}
}
route all {
  match PathPrefix(\`/\`)
  to origin
}
CONF
	GOMAXPROCS=1 taskset -c 0 "$1" run -c "$tmp/run-$2/edgeway.conf" >"$tmp/run-$2/log" 2>&1 &
	ppid=$!
	pids+=($ppid)
}

nginx_start() {
	need nginx
	mkdir -p "$tmp/nginx"
	cat >"$tmp/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx; proxy_temp_path $tmp/nginx; fastcgi_temp_path $tmp/nginx; uwsgi_temp_path $tmp/nginx; scgi_temp_path $tmp/nginx;
  keepalive_timeout 300s;
  keepalive_requests 1000000;
  upstream origin {
    server 127.0.0.1:$ORIGIN;
    keepalive 64;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:$NGINX http2;
    location / { grpc_pass grpc://origin; }
  }
}
CONF
	taskset -c 0 nginx -p "$tmp/nginx/" -e "$tmp/nginx/error.log" -c "$tmp/nginx/nginx.conf" &
	ppid=$!
	pids+=($ppid)
}

haproxy_start() {
	need haproxy
	mkdir -p "$tmp/haproxy"
	cat >"$tmp/haproxy/haproxy.cfg" <<CONF
global
  nbthread 1
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 300s
  timeout server 300s
  http-reuse always
frontend grpc
  bind 127.0.0.1:$HAPROXY proto h2
  default_backend origin
backend origin
  server o 127.0.0.1:$ORIGIN proto h2
CONF
	taskset -c 0 haproxy -db -f "$tmp/haproxy/haproxy.cfg" &
	ppid=$!
	pids+=($ppid)
}

# stop PID: stop one proxy started here.
stop() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

profile() {
	need perf
	edgeway_start "$tmp/edgeway" profile
	wait_call "$EDGE"
	loadrun "$EDGE" 2 >/dev/null
	log "profiling edgeway for ${DURATION}s (perf record -g)"
	perf record -q -g -o "$tmp/perf.data" -p "$ppid" -- sleep "$DURATION" 2>/dev/null &
	local rec=$!
	loadrun "$EDGE" "$DURATION" >/dev/null
	wait "$rec" || true
	stop "$ppid"
	[[ -n ${PERF_DATA:-} ]] && cp "$tmp/perf.data" "$PERF_DATA"
	echo
	echo "# edgeway's CPU profile under the same load, self time (perf report --no-children)"
	perf report -q -i "$tmp/perf.data" --no-children --sort symbol --percent-limit 0.8 -g none 2>/dev/null | sed 's/[ -]*$//' | head -45
	echo
	echo "# with children (inclusive), by symbol"
	perf report -q -i "$tmp/perf.data" --children --sort symbol --percent-limit 4 -g none 2>/dev/null | sed 's/[ -]*$//' | head -45
}

for round in $(seq 1 "${ROUNDS:-1}"); do
for name in $PROXIES; do
	log "$name (round $round)"
	case $name in
	edgeway) edgeway_start "$tmp/edgeway" edgeway ;;
	edgeway-base) edgeway_start "$EDGEWAY_BASE" edgeway-base ;;
	nginx) nginx_start ;;
	haproxy) haproxy_start ;;
	direct)
		measure "direct (no proxy)" "$ORIGIN"
		continue ;;
	*) echo "unknown proxy $name" >&2; exit 2 ;;
	esac
	port=$EDGE
	[[ $name == nginx ]] && port=$NGINX
	[[ $name == haproxy ]] && port=$HAPROXY
	if ! wait_call "$port"; then
		stop "$ppid"
		continue
	fi
	# nginx's CPU is its master's and worker's.
	measure "$name" "$port" "$ppid" $(pgrep -P "$ppid" || true)
	stop "$ppid"
done
done

echo
echo "# bench-grpc: grpc-go unary, $WORKERS workers, $CHANNELS channel(s), $SIZE B, ${DURATION}s; h2c front, h2c upstream; proxy on CPU 0, client and origin on CPU 1"
column -t -s $'\t' "$results"
echo "(one machine, shared with other work: figures are indicative)"
[[ -n ${PROFILE:-} ]] && profile
out=${RESULTS_DIR:-${TMPDIR:-/tmp}/edgeway-bench-results}/grpc-$(date +%Y%m%d-%H%M%S).tsv
mkdir -p "$(dirname "$out")" && cp "$results" "$out" && echo "saved $out"
