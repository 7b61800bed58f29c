#!/usr/bin/env bash
# What policies cost, on one proxy core.
#
# usage: scripts/bench-policy.sh [auth|compress|all]
#
# auth:     edgeway with no policy, a rate limit (one that never refuses)
#           and jwt verification (EdDSA, a key set file; every request
#           carries one bearer token) on the route.
# compress: edgeway `compress { algorithms gzip }` beside nginx `gzip on`
#           (level 1, nginx's default), each proxying a 10 KB JSON body
#           for clients sending Accept-Encoding: gzip.
#
# The origin is an nginx serving a static file on CPU 1; each proxy runs
# pinned to CPU 0 (edgeway GOMAXPROCS=1, nginx one worker); wrk (-t1
# -cCONNS, DURATION seconds, -H for the token or Accept-Encoding) runs on
# CPU 1. CPU per request is the proxy's utime+stime (/proc/PID/stat, all
# of nginx's processes) over the run divided by the requests wrk counted.
# The compression ratio is the body's size over its compressed size, as
# curl receives it from each proxy. Configurations are written to a temp
# folder, everything listens on 127.0.0.1, every process started here is
# stopped by its PID.
#
# Env: DURATION=10 CONNS=32 PORT=9560 (PORT..PORT+2 are used)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-all}
DURATION=${DURATION:-10}
CONNS=${CONNS:-32}
PORT=${PORT:-9560}
ORIGIN=$((PORT + 1)) PEER=$((PORT + 2))
. "$root/scripts/lib.sh"
chmod 755 "$tmp" # the origin nginx's worker reads the body from it
need nginx wrk curl openssl taskset
nginx_bin=$(command -v nginx)

log "building edgeway"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/edgeway" ./cmd/edgeway)

# A 10 KB JSON body: records of repetitive structure, as an API answers.
mkdir -p "$tmp/www"
{
	printf '['
	for i in $(seq 1 80); do
		printf '{"id":%d,"name":"user-%d","email":"user%d@example.com","active":true,"roles":["reader","writer"],"created":"2026-01-%02dT10:00:00Z"},' "$i" "$i" "$i" $((i % 28 + 1))
	done
	printf '{"id":0}]'
} >"$tmp/www/data.json"
size=$(stat -c %s "$tmp/www/data.json")

# nginx_conf DIR LISTEN BODY: an nginx configuration, one worker, no logs.
nginx_conf() {
	mkdir -p "$1"
	cat >"$1/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  default_type application/json;
  types { application/json json; }
  client_body_temp_path $1; proxy_temp_path $1; fastcgi_temp_path $1; uwsgi_temp_path $1; scgi_temp_path $1;
  server {
    listen 127.0.0.1:$2;
    $3
  }
}
CONF
}
nginx_conf "$tmp/origin" "$ORIGIN" "location / { root $tmp/www; }"
taskset -c 1 "$nginx_bin" -c "$tmp/origin/nginx.conf" -p "$tmp/origin" &
pids+=($!)

# wait_port PORT: until something answers there, at most 10 s.
wait_port() {
	for _ in $(seq 1 100); do
		curl -s -o /dev/null "http://127.0.0.1:$1/data.json" && return 0
		sleep 0.1 # polling interval
	done
	echo "nothing answers on port $1" >&2
	exit 1
}
wait_port "$ORIGIN"

# cpu_of PID...: utime+stime in clock ticks of the processes.
cpu_of() {
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo $t
}

# measure NAME PORT HEADER PID...: wrk against the proxy, then its CPU per
# request in microseconds.
measure() {
	local name=$1 port=$2 hdr=$3
	shift 3
	local before after out reqs
	curl -s -o /dev/null -H "$hdr" "http://127.0.0.1:$port/data.json"
	before=$(cpu_of "$@")
	out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${DURATION}s" -H "$hdr" "http://127.0.0.1:$port/data.json")
	after=$(cpu_of "$@")
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
	local tck
	tck=$(getconf CLK_TCK)
	awk -v n="$name" -v c=$((after - before)) -v r="$reqs" -v t="$tck" -v d="$DURATION" -v bad="${non2xx:-0}" \
		'BEGIN { printf "%-26s %9.0f req/s  %7.1f us CPU/request  (non-2xx %s)\n", n, r/d, c/t*1e6/r, bad }'
}

# edgeway_run NAME ROUTE_LINES [GLOBAL]: start edgeway on PORT, CPU 0.
edgeway_run() {
	mkdir -p "$tmp/$1"
	cat >"$tmp/$1/edgeway.conf" <<CONF
log { access off; level warn }
$3
listen bench {
  addr 127.0.0.1:$PORT
  protocols http1
  max_conns 0
}
upstream origin {
  server 127.0.0.1:$ORIGIN
  max_idle_conns 1024
}
route all {
  match PathPrefix(\`/\`)
  $2
  to origin
}
CONF
	GOMAXPROCS=1 taskset -c 0 "$tmp/edgeway" run -c "$tmp/$1/edgeway.conf" >"$tmp/$1/log" 2>&1 &
	epid=$!
	pids+=($epid)
	wait_port "$PORT"
}
edgeway_stop() {
	kill "$epid"
	wait "$epid" 2>/dev/null || true
}

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

auth() {
	log "auth: an EdDSA key set and a token"
	openssl genpkey -algorithm ed25519 -out "$tmp/jwt.key" 2>/dev/null
	x=$(openssl pkey -in "$tmp/jwt.key" -pubout -outform DER | tail -c 32 | b64url)
	printf '{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"bench","x":"%s"}]}' "$x" >"$tmp/jwks.json"
	exp=$(($(date +%s) + 3600))
	signed="$(printf '{"alg":"EdDSA","kid":"bench"}' | b64url).$(printf '{"sub":"bench","aud":"api","exp":%d}' "$exp" | b64url)"
	printf '%s' "$signed" >"$tmp/signed"
	sig=$(openssl pkeyutl -sign -inkey "$tmp/jwt.key" -rawin -in "$tmp/signed" | b64url)
	bearer="Authorization: Bearer $signed.$sig"
	echo "== policies on a route, edgeway on one core, $DURATION s, $CONNS connections, $size-byte body"
	edgeway_run none "" ""
	measure "edgeway, no policy" "$PORT" "$bearer" "$epid"
	edgeway_stop
	edgeway_run limit "limit bench" "limit bench { rate 1000000000/s; burst 1000000 }"
	measure "edgeway, rate limit" "$PORT" "$bearer" "$epid"
	edgeway_stop
	edgeway_run jwt "jwt { jwks $tmp/jwks.json; audience api; claim_header sub X-User }" ""
	local st
	st=$(curl -s -o /dev/null -w '%{http_code}' -H "$bearer" "http://127.0.0.1:$PORT/data.json")
	[[ $st == 200 ]] || { echo "jwt variant answers $st to the bench token" >&2; exit 1; }
	measure "edgeway, jwt" "$PORT" "$bearer" "$epid"
	edgeway_stop
}

compress() {
	local ae="Accept-Encoding: gzip" got
	echo "== compression of a $size-byte JSON body, proxy on one core, $DURATION s, $CONNS connections"
	edgeway_run compress "compress { algorithms gzip; types application/json }" ""
	got=$(curl -s -H "$ae" "http://127.0.0.1:$PORT/data.json" | wc -c)
	measure "edgeway compress gzip" "$PORT" "$ae" "$epid"
	awk -v s="$size" -v g="$got" 'BEGIN { printf "%-26s ratio %.1f (%d -> %d bytes)\n", "edgeway compress gzip", s/g, s, g }'
	edgeway_stop
	nginx_conf "$tmp/peer" "$PEER" "gzip on; gzip_types application/json; gzip_min_length 1024; gzip_proxied any;
    location / { proxy_pass http://127.0.0.1:$ORIGIN; proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
	sed -i 's|^http {|http {\n  upstream o { server 127.0.0.1:'"$ORIGIN"'; keepalive 64; }|; s|proxy_pass http://127.0.0.1:'"$ORIGIN"'|proxy_pass http://o|' "$tmp/peer/nginx.conf"
	taskset -c 0 "$nginx_bin" -c "$tmp/peer/nginx.conf" -p "$tmp/peer" &
	npid=$!
	pids+=($npid)
	wait_port "$PEER"
	got=$(curl -s -H "$ae" "http://127.0.0.1:$PEER/data.json" | wc -c)
	measure "nginx gzip on (level 1)" "$PEER" "$ae" "$npid" $(pgrep -P "$npid")
	awk -v s="$size" -v g="$got" 'BEGIN { printf "%-26s ratio %.1f (%d -> %d bytes)\n", "nginx gzip on (level 1)", s/g, s, g }'
}

case $what in
auth) auth ;;
compress) compress ;;
all) auth; compress ;;
*) echo "usage: $0 [auth|compress|all]" >&2; exit 2 ;;
esac
echo "(one machine, shared with other work: figures are indicative)"
