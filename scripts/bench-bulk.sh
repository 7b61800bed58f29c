#!/usr/bin/env bash
# Bulk transfers through the proxy against the same transfer made
# directly (issue 22): a SIZE-byte download (GET) and upload (PUT) with
# curl, ROUNDS times each, interleaved, medians of bytes / total time.
# Targets: direct (curl to the origin), edgeway with its defaults (request
# and response buffering on: memory, then a temporary file), edgeway on a
# route with both buffering off (streaming), and nginx with its defaults
# (proxy_request_buffering and proxy_buffering on, temp files past its
# buffers). The proxy runs on CPU 0, curl and the origin
# (internal/benchtools/bulkorigin) on CPU 1; ports 29001-29082.
# Knobs: SIZE=100000000 ROUNDS=5 TARGETS="direct edgeway edgeway-stream nginx"
# DIRS="down up".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib.sh"
SIZE=${SIZE:-100000000} ROUNDS=${ROUNDS:-5}
TARGETS=${TARGETS:-direct edgeway edgeway-stream nginx} DIRS=${DIRS:-down up}
need curl taskset go
[[ -x $root/bin/edgeway ]] || (cd "$root" && make build)
(cd "$root" && go build -o "$tmp/bulkorigin" ./internal/benchtools/bulkorigin)

origin=127.0.0.1:29001
taskset -c 1 "$tmp/bulkorigin" -addr "$origin" &
pids+=($!)

mkdir -p "$tmp/edgeway/buffers"
cat >"$tmp/edgeway/edgeway.conf" <<CONF
log { access off; level warn }
buffers { dir $tmp/edgeway/buffers }
listen bench {
  addr 127.0.0.1:29080
  protocols http1
  max_body_bytes 4GiB
  write_timeout 300s
}
upstream origin {
  server $origin
  idle_timeout 300s
}
route stream {
  match Host(\`stream\`)
  priority 100
  request_buffering off
  response_buffering off
  to origin
}
route all {
  match PathPrefix(\`/\`)
  to origin
}
CONF
if [[ " $TARGETS " == *" edgeway"* ]]; then
	taskset -c 0 "$root/bin/edgeway" run -c "$tmp/edgeway/edgeway.conf" &
	pids+=($!)
fi
if [[ " $TARGETS " == *" nginx "* ]]; then
	need nginx
	mkdir -p "$tmp/nginx"
	user="" # run as root, nginx's worker would be nobody, who cannot write to $tmp
	[[ $(id -u) != 0 ]] || user="user root;"
	cat >"$tmp/nginx/nginx.conf" <<CONF
$user
worker_processes 1;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  client_max_body_size 4g;
  upstream origin { server $origin; keepalive 16; }
  server {
    listen 127.0.0.1:29082;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
CONF
	taskset -c 0 nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" &
	pids+=($!)
fi

# url_of TARGET: the base URL and the Host field to send.
url_of() {
	case $1 in
	direct) echo "http://$origin x" ;;
	edgeway) echo "http://127.0.0.1:29080 x" ;;
	edgeway-stream) echo "http://127.0.0.1:29080 stream" ;;
	nginx) echo "http://127.0.0.1:29082 x" ;;
	*) echo "bench-bulk.sh: unknown target $1" >&2; exit 2 ;;
	esac
}
for t in $TARGETS; do
	read -r base host < <(url_of "$t")
	for ((i = 0; i < 100; i++)); do
		curl -sf -o /dev/null -H "Host: $host" "$base/bytes/1" && break
		sleep 0.1
	done
done

head -c "$SIZE" /dev/urandom >"$tmp/upload"
# rate DIRECTION TARGET: MB/s of one transfer (bytes / curl's time_total).
rate() {
	local base host out
	read -r base host < <(url_of "$2")
	if [[ $1 == down ]]; then
		out=$(taskset -c 1 curl -sf -o /dev/null -H "Host: $host" -w '%{size_download} %{time_total}' "$base/bytes/$SIZE")
	else
		out=$(taskset -c 1 curl -sS -o /dev/null -H "Host: $host" -H 'Content-Type: application/octet-stream' -H 'Expect:' -w '%{size_upload} %{time_total} %{http_code}' -T "$tmp/upload" "$base/up")
	fi
	awk -v s="$SIZE" '{ if ($1 != s || ($3 != "" && $3 != 200)) { print "failed(" $3 ")"; exit } printf "%.0f\n", $1 / $2 / 1e6 }' <<<"$out"
}
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

log "size $SIZE bytes, $ROUNDS rounds, targets: $TARGETS"
declare -A runs
for ((r = 0; r < ROUNDS; r++)); do
	for dir in $DIRS; do
		for t in $TARGETS; do
			runs[$dir.$t]+="$(rate "$dir" "$t") "
		done
	done
done
printf '%-16s %12s %8s %12s %8s\n' target "down MB/s" "/direct" "up MB/s" "/direct"
for t in $TARGETS; do
	down=$(tr ' ' '\n' <<<"${runs[down.$t]:-}" | grep . | median || true)
	up=$(tr ' ' '\n' <<<"${runs[up.$t]:-}" | grep . | median || true)
	ddown=$(tr ' ' '\n' <<<"${runs[down.direct]:-}" | grep . | median || true)
	dup=$(tr ' ' '\n' <<<"${runs[up.direct]:-}" | grep . | median || true)
	awk -v t="$t" -v d="${down:--}" -v u="${up:--}" -v dd="${ddown:-0}" -v du="${dup:-0}" \
		'BEGIN { printf "%-16s %12s %8s %12s %8s\n", t, d, (dd && d != "-") ? sprintf("%.2f", d / dd) : "-", u, (du && u != "-") ? sprintf("%.2f", u / du) : "-" }'
done
left=$(find "$tmp/edgeway/buffers" -type f | wc -l)
log "temporary files left in edgeway's buffers dir: $left"
