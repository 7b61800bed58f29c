#!/usr/bin/env bash
# TLS front-end benchmarks: edgeway beside nginx and HAProxy (and a plain Go
# crypto/tls server, "direct-go", as the library's ceiling).
#
# usage: scripts/bench-tls.sh [idle|handshake|passthrough|all]   (default all)
#
# Every server answers GET / itself ("ok\n", no upstream), so only the TLS
# front end is measured. Each uses the same self-signed ECDSA P-256
# certificate, TLS 1.2 + 1.3 enabled, idle timeouts 300 s, and runs pinned to
# CPU 0 (nginx worker_processes 1, haproxy nbthread 1, Go servers
# GOMAXPROCS=1); the load generator (internal/benchtools/tlsload) runs on
# CPU 1. The client always forces TLS 1.3 with X25519 only (no post-quantum
# hybrid) and never resumes a session, so every server does the same work.
#
#   idle         Memory per idle TLS connection. Start the server, send a few
#                requests, read RSS and Pss summed over its process tree; open
#                IDLE_N connections (full handshake + one keep-alive GET /
#                each, from 127.0.0.2, .3, ...), wait SETTLE s, read again.
#                bytes/conn = (after - before) / opened. Then a sample is asked
#                for a second answer (were they still open?) and all are reset.
#                IDLE_PROTOS picks the protocols, each a run per server:
#                http1 (HTTP/1.1 by ALPN) and h2 (HTTP/2 by ALPN: nginx's
#                listen ... http2, HAProxy's alpn h2, edgeway's own server;
#                the client sends the preface and one GET on stream 1, the
#                probe a GET on stream 3).
#   handshake    Full TLS 1.3 handshakes per second: tlsload -mode handshake,
#                HS_CONC connections at a time for HS_DURATION s (HS_REQ=1 adds
#                one request per connection). CPU 0's busy fraction comes from
#                /proc/stat; hs/s per busy core = hs/s / busy fraction, the
#                fair number when the client (CPU 1) saturates first. The
#                server's own CPU (utime+stime of its tree) is shown beside it.
#                Each connection ends with close_notify and waits for the server
#                to close, so the server has finished its side of every
#                handshake counted. Before each run the script waits (at most
#                QUIET_WAIT s) for both CPUs to fall under QUIET_PCT % busy.
#   passthrough  Raw TLS streamed through edgeway's SNI passthrough. A TLS sink
#                (tlsload -mode sink, cert for pass.test, CPU 1) counts what it
#                gets; "direct" streams PT_BYTES straight to it, "edgeway"
#                streams through edgeway's TLS port with SNI pass.test (edgeway
#                still terminates other names). MB/s (10^6 B/s), edgeway's CPU
#                seconds per GiB (utime+stime from /proc/PID/stat), CPU 0 busy.
#                "haproxy-tcp" (PT_PEERS=haproxy, the default; PT_PEERS="" drops
#                it) is HAProxy in TCP mode routing by req.ssl_sni, for reference.
#
# handshake and passthrough run ROUNDS rounds (default 2) and report medians.
# Results (markdown + tsv) go to RESULTS_DIR, default
# ${TMPDIR:-/tmp}/edgeway-tls-bench/<stamp>. Every process is started here
# and stopped by its PID; every run has a time limit.
#
# Env: SERVERS="nginx haproxy edgeway direct-go" IDLE_N=10000 SETTLE=3 IDLE_PROTOS="http1 h2"
#      HS_DURATION=10 HS_CONC=32 HS_REQ=0 PT_BYTES=1GiB PT_PEERS=haproxy ROUNDS=2
#      TLS_PORT_BASE=9440 EDGEWAY_BIN=bin/edgeway BENCH_DIR=../shared/bench
#      QUIET_PCT=15 QUIET_WAIT=20 KEEP_TMP=0
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BENCH_DIR=${BENCH_DIR:-$root/../shared/bench}
[[ -f $BENCH_DIR/lib.sh ]] || { echo "bench harness not found at $BENCH_DIR (set BENCH_DIR)" >&2; exit 1; }
# lib.sh gives log, die, stop_pid, tree_pids, rss_kb, pss_kb, cpu_snap,
# cpu_pct, wait_http and bench_cleanup (stops STARTED_PIDS, removes
# BENCH_TMP). We do not call its bench_init: it builds the harness's tools.
# shellcheck source=../../shared/bench/lib.sh
source "$BENCH_DIR/lib.sh"

PART=${1:-all}
case $PART in idle | handshake | passthrough | all) ;; *)
	echo "usage: $0 [idle|handshake|passthrough|all]" >&2
	exit 2
	;;
esac

PROXY_CPU=0 LOAD_CPU=1 # names lib.sh's cpu_snap reads
SERVERS=${SERVERS:-nginx haproxy edgeway direct-go}
IDLE_N=${IDLE_N:-10000}
IDLE_PROTOS=${IDLE_PROTOS:-http1 h2}
SETTLE=${SETTLE:-3}
HS_DURATION=${HS_DURATION:-10}
HS_CONC=${HS_CONC:-32}
HS_REQ=${HS_REQ:-0}
PT_BYTES=${PT_BYTES:-1GiB}
PT_PEERS=${PT_PEERS-haproxy}
ROUNDS=${ROUNDS:-2}
QUIET_PCT=${QUIET_PCT:-15}
QUIET_WAIT=${QUIET_WAIT:-20}
base=${TLS_PORT_BASE:-9440}
declare -A PORT=([nginx]=$((base + 1)) [haproxy]=$((base + 2)) [edgeway]=$((base + 4)) [direct-go]=$((base + 5)))
SINK_PORT=$((base + 6))
EDGEWAY_BIN=${EDGEWAY_BIN:-$root/bin/edgeway}
OUT=${RESULTS_DIR:-${TMPDIR:-/tmp}/edgeway-tls-bench/$(date +%Y%m%d-%H%M%S)}
CLK_TCK=$(getconf CLK_TCK)

# --- setup ------------------------------------------------------------------

setup() {
	local cmd
	for cmd in nginx haproxy openssl taskset curl ss awk go timeout; do
		command -v "$cmd" >/dev/null || die "missing command: $cmd"
	done
	mkdir -p "$OUT"
	BENCH_TMP=$(mktemp -d /tmp/tlsbench.XXXXXX)
	export BENCH_TMP
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM HUP
	# One fd per connection on each side, plus slack: raise the soft limit
	# to the hard one and lower IDLE_N if even that is too small.
	ulimit -Sn "$(ulimit -Hn)" 2>/dev/null || true
	NOFILE=$(ulimit -Sn)
	IDLE_NOTE=""
	if ((IDLE_N + 300 > NOFILE)); then
		IDLE_NOTE="IDLE_N lowered from $IDLE_N to $((NOFILE - 300)): fd limit (hard) is $NOFILE"
		IDLE_N=$((NOFILE - 300))
		log "$IDLE_NOTE"
	fi
	TLSLOAD=$BENCH_TMP/tlsload
	(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$TLSLOAD" ./internal/benchtools/tlsload) ||
		die "building tlsload failed"
	[[ -x $EDGEWAY_BIN ]] || (cd "$root" && make build) || die "building edgeway failed"
	make_cert "$BENCH_TMP/tls" localhost "DNS:localhost,IP:127.0.0.1"
	make_cert "$BENCH_TMP/pass" pass.test "DNS:pass.test"
	log "temp dir $BENCH_TMP; results $OUT; fd limit $NOFILE; load average $(cut -d' ' -f1-3 /proc/loadavg)"
}

# make_cert DIR CN SAN: self-signed ECDSA P-256 cert.pem, key.pem and
# combined.pem (haproxy's format) in DIR.
make_cert() {
	mkdir -p "$1"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 \
		-subj "/CN=$2" -addext "subjectAltName=$3" \
		-keyout "$1/key.pem" -out "$1/cert.pem" 2>/dev/null || die "openssl failed"
	cat "$1/cert.pem" "$1/key.pem" >"$1/combined.pem"
}

# --- server configs ---------------------------------------------------------

gen_nginx() { # DIR PORT
	mkdir -p "$1/tmp"
	cat >"$1/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process on;
pid $1/nginx.pid;
error_log $1/error.log warn;
worker_rlimit_nofile $NOFILE;
events {
    # more slots than fds, as in the shared harness: nginx starts closing
    # idle keep-alive connections once fewer than 1/16 of its slots are free
    worker_connections 65536;
    use epoll;
}
http {
    access_log off;
    client_body_temp_path $1/tmp/body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$2 ssl http2;
        ssl_certificate $BENCH_TMP/tls/cert.pem;
        ssl_certificate_key $BENCH_TMP/tls/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / {
            default_type text/plain;
            return 200 "ok\n";
        }
    }
}
EOF
}

gen_haproxy() { # DIR PORT
	local maxconn=$((NOFILE - 200 < 100000 ? NOFILE - 200 : 100000))
	cat >"$1/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn $maxconn
    no strict-limits
defaults
    mode http
    maxconn $maxconn
    option http-keep-alive
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    timeout http-request 30s
    timeout http-keep-alive 300s
frontend fe
    bind 127.0.0.1:$2 ssl crt $BENCH_TMP/tls/combined.pem alpn h2,http/1.1 ssl-min-ver TLSv1.2
    http-request return status 200 content-type text/plain string "ok\n"
EOF
}

gen_edgeway() { # DIR PORT [passthrough]
	local pass=""
	if [[ ${3:-} == passthrough ]]; then
		pass="upstream sink { server 127.0.0.1:$SINK_PORT }
tcp route pass {
  match HostSNI(\`pass.test\`)
  to sink
}"
	fi
	cat >"$1/edgeway.conf" <<EOF
log { access off; level warn }
tls { cert $BENCH_TMP/tls/cert.pem $BENCH_TMP/tls/key.pem }
listen bench {
  addr 127.0.0.1:$2
  protocols tls http1 h2
  idle_timeout 300s
}
$pass
route all {
  match PathPrefix(\`/\`)
  respond 200 "ok\n"
}
EOF
	"$EDGEWAY_BIN" validate -c "$1/edgeway.conf" >"$1/validate.log" 2>&1 ||
		die "edgeway rejected its config: $(cat "$1/validate.log")"
}

# gen_haproxy_tcp DIR PORT: the passthrough reference, HAProxy in TCP mode
# routing by SNI (req.ssl_sni) to the sink, with its default settings (no
# splicing unless told).
gen_haproxy_tcp() {
	cat >"$1/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 1000
defaults
    mode tcp
    timeout connect 5s
    timeout client 300s
    timeout server 300s
frontend fe
    bind 127.0.0.1:$2
    tcp-request inspect-delay 5s
    tcp-request content accept if { req_ssl_hello_type 1 }
    use_backend sink if { req.ssl_sni -i pass.test }
backend sink
    server s1 127.0.0.1:$SINK_PORT
EOF
	haproxy -c -f "$1/haproxy.cfg" >"$1/check.log" 2>&1 || die "haproxy rejected its tcp config: $(tail -5 "$1/check.log")"
}

# start_server NAME [passthrough]: start NAME pinned to CPU 0 and wait until
# https://127.0.0.1:PORT/ answers 200. Sets SERVER_PID and SERVER_DIR.
start_server() {
	local name=$1 port=${PORT[$1]:?unknown server $1} d
	d="$BENCH_TMP/$name${2:+-$2}"
	mkdir -p "$d"
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		die "port $port is already in use; cannot start $name (move TLS_PORT_BASE)"
	fi
	case $name in
	nginx)
		gen_nginx "$d" "$port"
		taskset -c 0 nginx -p "$d/" -e "$d/error.log" -c "$d/nginx.conf" >"$d/stdout.log" 2>&1 &
		;;
	haproxy)
		gen_haproxy "$d" "$port"
		haproxy -c -f "$d/haproxy.cfg" >"$d/check.log" 2>&1 || die "haproxy rejected its config: $(tail -5 "$d/check.log")"
		taskset -c 0 haproxy -db -f "$d/haproxy.cfg" >"$d/stdout.log" 2>&1 &
		;;
	edgeway)
		gen_edgeway "$d" "$port" "${2:-}"
		GOMAXPROCS=1 taskset -c 0 "$EDGEWAY_BIN" run -c "$d/edgeway.conf" >"$d/stdout.log" 2>&1 &
		;;
	direct-go)
		GOMAXPROCS=1 taskset -c 0 "$TLSLOAD" -mode tlsserver -listen "127.0.0.1:$port" \
			-cert "$BENCH_TMP/tls/cert.pem" -key "$BENCH_TMP/tls/key.pem" >"$d/stdout.log" 2>&1 &
		;;
	*) die "unknown server '$name'" ;;
	esac
	SERVER_PID=$! SERVER_DIR=$d
	STARTED_PIDS+=("$SERVER_PID")
	if ! wait_http "https://127.0.0.1:$port/" "$SERVER_PID" -k; then
		log "$name did not come up on :$port; its output:"
		tail -n 20 "$d"/*.log >&2 2>/dev/null || true
		stop_pid "$SERVER_PID"
		return 1
	fi
	local body
	body=$(curl -sk --max-time 5 "https://127.0.0.1:$port/")
	[[ $body == ok ]] || log "warning: $name answered '$body', not 'ok'"
}

stop_server() {
	stop_pid "$SERVER_PID"
	SERVER_PID=""
}

# cpu_ticks_split PID: "utime stime" of PID and its descendants, in clock
# ticks. cpu_ticks PID: their sum.
cpu_ticks_split() {
	local ut=0 st=0 p v
	for p in $(tree_pids "$1"); do
		# fields after the ") " that ends comm: utime is the 12th, stime the 13th
		read -r -a v <<<"$(sed -E 's/^.*\) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12, $13}')"
		ut=$((ut + ${v[0]:-0})) st=$((st + ${v[1]:-0}))
	done
	echo "$ut $st"
}

cpu_ticks() {
	local v
	read -r -a v <<<"$(cpu_ticks_split "$1")"
	echo $((v[0] + v[1]))
}

# wait_quiet: wait (at most QUIET_WAIT s) for both CPUs to be under
# QUIET_PCT % busy for a second; on a shared machine other work skews CPU 0.
wait_quiet() {
	local i a b p=(- -)
	for ((i = 0; i < QUIET_WAIT; i++)); do
		a=$(cpu_snap)
		sleep 1
		b=$(cpu_snap)
		read -r -a p <<<"$(cpu_pct "$a" "$b")"
		((p[0] < QUIET_PCT && p[1] < QUIET_PCT)) && return 0
	done
	log "warning: CPUs not quiet after ${QUIET_WAIT}s (last: CPU0 ${p[0]}%, CPU1 ${p[1]}%)"
}

# field KEY LINE: the value of KEY=value in LINE.
field() { sed -nE "s/.*(^| )$1=([^ ]*).*/\\2/p" <<<"$2"; }

# --- idle -------------------------------------------------------------------

IDLE_TSV=$OUT/idle.tsv

# measure_idle NAME PROTO: one idle run of server NAME, PROTO http1 or h2.
measure_idle() {
	local name=$1 proto=$2 port=${PORT[$1]} d cpid i ready rb ra pb pa est probe opened failed secs note="" h2flag=""
	[[ $proto == h2 ]] && h2flag=-h2
	if ! start_server "$name"; then
		printf '%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t%s\n' "$name" "$IDLE_N" "FAILED: did not start" "$proto" >>"$IDLE_TSV"
		return 0
	fi
	d=$SERVER_DIR
	for ((i = 0; i < 8; i++)); do curl -sk --max-time 5 -o /dev/null "https://127.0.0.1:$port/" || true; done
	sleep 1
	rb=$(rss_kb "$SERVER_PID") pb=$(pss_kb "$SERVER_PID")

	# The client holds the connections until its stdin ends: fd 7 is the
	# only writer of the fifo, closed below to release them.
	mkfifo "$d/hold-$proto.fifo"
	exec 7<>"$d/hold-$proto.fifo"
	taskset -c 1 "$TLSLOAD" -mode idle ${h2flag:+"$h2flag"} -addr "127.0.0.1:$port" -n "$IDLE_N" -c 64 \
		-hold 300s -open-timeout 120s <"$d/hold-$proto.fifo" 7>&- >"$d/client-$proto.out" 2>"$d/client-$proto.err" &
	cpid=$!
	STARTED_PIDS+=("$cpid")
	ready=""
	for ((i = 0; i < 1300; i++)); do # <= 130 s
		ready=$(grep '^READY' "$d/client-$proto.out" 2>/dev/null || true)
		[[ -n $ready ]] && break
		kill -0 "$cpid" 2>/dev/null || break
		sleep 0.1
	done
	if [[ -z $ready ]]; then
		exec 7>&-
		stop_pid "$cpid"
		stop_server
		note="FAILED: client never got all connections open: $(head -c 300 "$d/client-$proto.err" | tr '\n\t' '  ')"
		printf '%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t%s\n' "$name" "$IDLE_N" "$note" "$proto" >>"$IDLE_TSV"
		log "$name: $note"
		return 0
	fi
	sleep "$SETTLE"
	ra=$(rss_kb "$SERVER_PID") pa=$(pss_kb "$SERVER_PID")
	est=$(ss -Htn state established "( sport = :$port )" | wc -l)
	kill -0 "$SERVER_PID" 2>/dev/null || note="server died; "
	exec 7>&- # stdin EOF: the client probes a sample, then resets them all
	for ((i = 0; i < 600; i++)); do
		grep -q '^CLOSED' "$d/client-$proto.out" 2>/dev/null && break
		kill -0 "$cpid" 2>/dev/null || break
		sleep 0.1
	done
	stop_pid "$cpid"
	probe=$(sed -nE 's/^PROBE ok=([0-9]+) of=([0-9]+).*/\1\/\2/p' "$d/client-$proto.out")
	grep -qiE 'panic|fatal' "$d"/stdout.log 2>/dev/null && note="${note}server log has panic/fatal (see $d); "
	stop_server
	opened=$(field ok "$ready") failed=$(field failed "$ready") secs=$(field secs "$ready")
	((failed == 0)) || note="$note$failed connections failed: $(head -c 200 "$d/client-$proto.err" | tr '\n\t' '  '); "
	((est >= opened)) || note="${note}only $est of $opened established at measurement; "
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$IDLE_N" "$opened" "$failed" "$secs" \
		"$rb" "$ra" "$(((ra - rb) * 1024 / (opened > 0 ? opened : 1)))" \
		"$pb" "$pa" "$(((pa - pb) * 1024 / (opened > 0 ? opened : 1)))" \
		"$est" "${probe:-none}" "${note:-ok}" "$proto" >>"$IDLE_TSV"
	log "$name ($proto): opened $opened in ${secs}s, RSS $rb -> $ra KiB, established $est, probe ${probe:-none} ${note}"
}

report_idle() {
	{
		echo "## Idle TLS connections: server memory (summed over its process tree)"
		echo
		echo "N = $IDLE_N; each connection: full TLS 1.3 handshake (X25519, ECDSA P-256), one GET / answered (HTTP/1.1 or HTTP/2 by ALPN), then idle. ${IDLE_NOTE}"
		echo
		echo "| server | protocol | opened (secs) | RSS before -> after (KiB) | bytes/conn (RSS) | bytes/conn (Pss) | RSS ratio to nginx (same protocol) | still open (established / probe) | note |"
		echo "|---|---|---|---|---|---|---|---|---|"
		awk -F'\t' '
			NR > 1 { row[NR] = $0; if ($1 == "nginx" && $3 != "-") base[$15] = $8 }
			END {
				for (i = 2; i <= NR; i++) {
					split(row[i], f, "\t")
					if (f[3] == "-") { printf "| %s | %s | - | - | - | - | - | - | %s |\n", f[1], f[15], f[14]; continue }
					ratio = (base[f[15]] > 0) ? sprintf("%.2f", f[8] / base[f[15]]) : "-"
					printf "| %s | %s | %s (%.1fs) | %s -> %s | %s | %s | %s | %s / %s | %s |\n", f[1], f[15], f[3], f[5], f[6], f[7], f[8], f[11], ratio, f[12], f[13], f[14]
				}
			}' "$IDLE_TSV"
	} | tee "$OUT/idle.md"
}

run_idle() {
	local name proto
	printf 'server\tN\topened\tfailed\topen_secs\trss_before_kb\trss_after_kb\trss_bytes_per_conn\tpss_before_kb\tpss_after_kb\tpss_bytes_per_conn\testablished\tprobe\tnote\tproto\n' >"$IDLE_TSV"
	for proto in $IDLE_PROTOS; do
		case $proto in http1 | h2) ;; *) die "IDLE_PROTOS: unknown protocol '$proto' (http1, h2)" ;; esac
		for name in $SERVERS; do
			measure_idle "$name" "$proto"
			sleep 0.5
		done
	done
	report_idle
}

# --- handshake --------------------------------------------------------------

HS_TSV=$OUT/handshake.tsv

# handshake_round NAME ROUND: one tlsload run against the running server.
handshake_round() {
	local name=$1 round=$2 port=${PORT[$1]} out s0 s1 t0 t1 pct res own rate
	local req=() note=ok
	[[ $HS_REQ == 1 ]] && req=(-req)
	out="$SERVER_DIR/hs-$round"
	wait_quiet
	t0=$(cpu_ticks "$SERVER_PID") s0=$(cpu_snap)
	timeout -k 5 $((HS_DURATION + 40)) taskset -c 1 "$TLSLOAD" -mode handshake -addr "127.0.0.1:$port" \
		-d "${HS_DURATION}s" -c "$HS_CONC" "${req[@]}" >"$out.out" 2>"$out.err" || note="client exit $?"
	s1=$(cpu_snap) t1=$(cpu_ticks "$SERVER_PID")
	read -r -a pct <<<"$(cpu_pct "$s0" "$s1")"
	res=$(grep '^RESULT' "$out.out" || true)
	if [[ -z $res ]]; then
		note="no result ($note): $(head -c 200 "$out.err" | tr '\n\t' '  ')"
		res="handshakes=0 failed=- secs=0 hs_per_sec=0"
	elif [[ $(field failed "$res") != 0 ]]; then
		note="$(field failed "$res") failed: $(head -c 200 "$out.err" | tr '\n\t' '  ')"
	fi
	kill -0 "$SERVER_PID" 2>/dev/null || note="server died; $note"
	rate=$(field hs_per_sec "$res")
	# server CPU % of one core over the run, from its own ticks
	own=$(awk -v t="$((t1 - t0))" -v hz="$CLK_TCK" -v s="$(field secs "$res")" 'BEGIN { printf "%.0f", (s > 0) ? 100 * t / hz / s : 0 }')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$rate" "$(field failed "$res")" "${pct[0]}" "${pct[1]}" "$own" "$note" >>"$HS_TSV"
	log "$name round $round: $rate hs/s, CPU0 ${pct[0]}%, CPU1 ${pct[1]}%, server own ${own}%, $note"
}

report_handshake() {
	{
		echo "## Full TLS 1.3 handshakes per second (X25519 + ECDSA P-256, no resumption$([[ $HS_REQ == 1 ]] && echo ', one request each'))"
		echo
		echo "tlsload -mode handshake -c $HS_CONC for ${HS_DURATION}s on CPU 1; server on CPU 0; medians of $ROUNDS rounds."
		echo "hs/s per busy core = hs/s / CPU 0 busy fraction (/proc/stat, includes the kernel's loopback work there)."
		echo
		echo "hs per server CPU-second = hs/s / the server's own CPU fraction (utime+stime of its tree): steadier when other work shares CPU 0."
		echo
		echo "| server | hs/s | failed | CPU 0 busy % | CPU 1 busy % | hs/s per busy core | ratio to nginx (per core) | server's own CPU % | hs per server CPU-second | note |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
		awk -F'\t' '
			function med(s,   n, a, i, j, t) {
				n = split(s, a, " ")
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
				return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			NR > 1 {
				if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 }
				rate[$1] = rate[$1] " " $3; fail[$1] = fail[$1] + $4; c0[$1] = c0[$1] " " $5
				c1[$1] = c1[$1] " " $6; own[$1] = own[$1] " " $7
				pc[$1] = pc[$1] " " (($5 > 0) ? $3 / ($5 / 100) : 0)
				po[$1] = po[$1] " " (($7 > 0) ? $3 / ($7 / 100) : 0)
				if ($8 != "ok") note[$1] = note[$1] "r" $2 ": " $8 "; "
			}
			END {
				base = ("nginx" in seen) ? med(pc["nginx"]) : 0
				for (i = 1; i <= k; i++) {
					s = order[i]; p = med(pc[s])
					printf "| %s | %.0f | %d | %.0f | %.0f | %.0f | %s | %.0f | %.0f | %s |\n", s, med(rate[s]), fail[s], med(c0[s]), med(c1[s]), p, (base > 0) ? sprintf("%.2f", p / base) : "-", med(own[s]), med(po[s]), (note[s] == "") ? "ok" : note[s]
				}
			}' "$HS_TSV"
	} | tee "$OUT/handshake.md"
}

run_handshake() {
	local name round
	printf 'server\tround\ths_per_sec\tfailed\tcpu0_pct\tcpu1_pct\tserver_own_pct\tnote\n' >"$HS_TSV"
	for name in $SERVERS; do
		if ! start_server "$name"; then
			printf '%s\t1\t0\t-\t0\t0\t0\t%s\n' "$name" "FAILED: did not start" >>"$HS_TSV"
			continue
		fi
		for ((round = 1; round <= ROUNDS; round++)); do
			handshake_round "$name" "$round"
		done
		grep -qiE 'panic|fatal' "$SERVER_DIR"/stdout.log 2>/dev/null && log "warning: $name log has panic/fatal ($SERVER_DIR)"
		stop_server
	done
	report_handshake
}

# --- passthrough ------------------------------------------------------------

PT_TSV=$OUT/passthrough.tsv

# stream_round PATH ROUND ADDR [PID]: one stream of PT_BYTES to ADDR with
# SNI pass.test; with the PID of the proxy in the path, also its CPU seconds.
stream_round() {
	local path=$1 round=$2 addr=$3 pid=${4:-} cpu out s0 s1 t0="0 0" t1="0 0" pct res note=ok secs_per_gib="- - -"
	out="$BENCH_TMP/pt-$path-$round"
	wait_quiet
	[[ -n $pid ]] && t0=$(cpu_ticks_split "$pid")
	s0=$(cpu_snap)
	timeout -k 5 300 taskset -c 1 "$TLSLOAD" -mode stream -addr "$addr" -servername pass.test \
		-bytes "$PT_BYTES" >"$out.out" 2>"$out.err" || note="client exit $?: $(head -c 200 "$out.err" | tr '\n\t' '  ')"
	s1=$(cpu_snap)
	[[ -n $pid ]] && t1=$(cpu_ticks_split "$pid")
	read -r -a pct <<<"$(cpu_pct "$s0" "$s1")"
	res=$(grep '^RESULT' "$out.out" || true)
	[[ -n $res ]] || res="bytes=0 secs=0 mb_per_sec=0"
	if [[ -n $pid ]]; then
		kill -0 "$pid" 2>/dev/null || note="$path died; $note"
		# "total user sys" CPU seconds per GiB
		secs_per_gib=$(awk -v a="$t0" -v z="$t1" -v hz="$CLK_TCK" -v b="$(field bytes "$res")" 'BEGIN {
			split(a, x); split(z, y); g = (b > 0) ? b / 2^30 : 1e99
			u = (y[1] - x[1]) / hz / g; s = (y[2] - x[2]) / hz / g
			printf "%.3f %.3f %.3f", u + s, u, s }')
	fi
	read -r -a cpu <<<"$secs_per_gib"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$path" "$round" "$(field mb_per_sec "$res")" "$(field secs "$res")" \
		"${cpu[0]}" "${pct[0]}" "${pct[1]}" "$note" "${cpu[1]}" "${cpu[2]}" >>"$PT_TSV"
	log "passthrough $path round $round: $(field mb_per_sec "$res") MB/s in $(field secs "$res")s, CPU0 ${pct[0]}%, CPU1 ${pct[1]}%, proxy s/GiB (total user sys) $secs_per_gib, $note"
}

report_passthrough() {
	{
		echo "## TLS passthrough by SNI: one connection streaming $PT_BYTES"
		echo
		echo "Client and TLS sink on CPU 1, the proxy on CPU 0 (haproxy-tcp: HAProxy mode tcp, req.ssl_sni, default settings); 256 KiB writes, close_notify, sink answers the byte count. Medians of $ROUNDS rounds. MB = 10^6 bytes."
		echo
		echo "| path | MB/s | ratio to direct | proxy CPU s/GiB (user + sys) | CPU 0 busy % | CPU 1 busy % | note |"
		echo "|---|---|---|---|---|---|---|"
		awk -F'\t' '
			function med(s,   n, a, i, j, t) {
				n = split(s, a, " ")
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
				return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			NR > 1 {
				if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 }
				mb[$1] = mb[$1] " " $3; cpu[$1] = cpu[$1] " " $5; c0[$1] = c0[$1] " " $6; c1[$1] = c1[$1] " " $7
				ut[$1] = ut[$1] " " $9; st[$1] = st[$1] " " $10
				if ($8 != "ok") note[$1] = note[$1] "r" $2 ": " $8 "; "
			}
			END {
				base = ("direct" in seen) ? med(mb["direct"]) : 0
				for (i = 1; i <= k; i++) {
					s = order[i]; m = med(mb[s])
					printf "| %s | %.0f | %s | %s | %.0f | %.0f | %s |\n", s, m, (base > 0) ? sprintf("%.2f", m / base) : "-", (s != "direct") ? sprintf("%.3f (%.3f + %.3f)", med(cpu[s]), med(ut[s]), med(st[s])) : "-", med(c0[s]), med(c1[s]), (note[s] == "") ? "ok" : note[s]
				}
			}' "$PT_TSV"
	} | tee "$OUT/passthrough.md"
}

run_passthrough() {
	local sink_pid i round eport=${PORT[edgeway]} hport=$((base + 7)) hap_pid="" d
	printf 'path\tround\tmb_per_sec\tsecs\tproxy_cpu_s_per_gib\tcpu0_pct\tcpu1_pct\tnote\tuser_s_per_gib\tsys_s_per_gib\n' >"$PT_TSV"
	if (exec 3<>"/dev/tcp/127.0.0.1/$SINK_PORT") 2>/dev/null; then
		die "port $SINK_PORT is already in use; cannot start the sink (move TLS_PORT_BASE)"
	fi
	taskset -c 1 "$TLSLOAD" -mode sink -listen "127.0.0.1:$SINK_PORT" \
		-cert "$BENCH_TMP/pass/cert.pem" -key "$BENCH_TMP/pass/key.pem" >"$BENCH_TMP/sink.out" 2>"$BENCH_TMP/sink.err" &
	sink_pid=$!
	STARTED_PIDS+=("$sink_pid")
	for ((i = 0; i < 100; i++)); do
		grep -q '^LISTENING' "$BENCH_TMP/sink.out" 2>/dev/null && break
		kill -0 "$sink_pid" 2>/dev/null || die "sink did not start: $(cat "$BENCH_TMP/sink.err")"
		sleep 0.1
	done
	start_server edgeway passthrough || die "edgeway did not start with the passthrough config"
	if [[ " $PT_PEERS " == *" haproxy "* ]]; then
		d="$BENCH_TMP/haproxy-tcp"
		mkdir -p "$d"
		gen_haproxy_tcp "$d" "$hport"
		taskset -c 0 haproxy -db -f "$d/haproxy.cfg" >"$d/stdout.log" 2>&1 &
		hap_pid=$!
		STARTED_PIDS+=("$hap_pid")
		for ((i = 0; i < 100; i++)); do
			(exec 3<>"/dev/tcp/127.0.0.1/$hport") 2>/dev/null && break
			kill -0 "$hap_pid" 2>/dev/null || { log "haproxy (tcp) did not start: $(tail -3 "$d/stdout.log")"; hap_pid=""; break; }
			sleep 0.1
		done
	fi
	for ((round = 1; round <= ROUNDS; round++)); do
		stream_round direct "$round" "127.0.0.1:$SINK_PORT"
		stream_round edgeway "$round" "127.0.0.1:$eport" "$SERVER_PID"
		if [[ -n $hap_pid ]]; then stream_round haproxy-tcp "$round" "127.0.0.1:$hport" "$hap_pid"; fi
	done
	curl -sk --max-time 5 -o /dev/null -w '' "https://127.0.0.1:$eport/" ||
		log "warning: edgeway stopped answering terminated TLS after the passthrough rounds"
	stop_server
	if [[ -n $hap_pid ]]; then stop_pid "$hap_pid"; fi
	stop_pid "$sink_pid"
	[[ -s $BENCH_TMP/sink.err ]] && log "sink errors: $(head -c 500 "$BENCH_TMP/sink.err")"
	report_passthrough
}

# --- main -------------------------------------------------------------------

setup
{
	echo "# TLS benchmarks $(date -u +%FT%TZ)"
	echo
	echo "nproc: $(nproc); kernel: $(uname -r); cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "nginx: $(nginx -v 2>&1 | sed 's/.*version: //'); haproxy: $(haproxy -v 2>/dev/null | head -1 | cut -d' ' -f3); $(openssl version | cut -d' ' -f1-2); $(go version | cut -d' ' -f3); edgeway: $("$EDGEWAY_BIN" version 2>/dev/null | head -1)"
	echo "fd limit: $NOFILE; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
} >"$OUT/summary.md"
for part in idle handshake passthrough; do
	[[ $PART == all || $PART == "$part" ]] || continue
	t=$SECONDS
	log "== $part =="
	"run_$part"
	echo
	log "$part took $((SECONDS - t)) s"
	{ cat "$OUT/$part.md"; echo; echo "($part took $((SECONDS - t)) s)"; echo; } >>"$OUT/summary.md"
done
log "results in $OUT (summary.md)"
