#!/usr/bin/env bash
# edgeway as a peer of the shared bench harness: writes a configuration for
# $LISTEN -> $UPSTREAM1,$UPSTREAM2 (MODE=h2: over TLS) (round robin, access log off, the same
# timeouts as the peers) into $PROXY_DIR and runs edgeway in the foreground.
# VARIANT prices observability (scripts/bench.sh runs each as its own peer):
#   off (default)  access log off, as the peers run
#   log            the default access log, text, to a file in $PROXY_DIR
#   log10          the same with `sample 10%` (errors and slow requests kept)
#   trace1 trace100  access log off, OTLP tracing with 1% / 100% of requests
#                  sampled, exported to an OTLP/HTTP sink at $OTLP_SINK
#   limit          access log off, every request counted against a rate
#                  limit per client address (one that never refuses)
#   tlsup          access log off, TLS to the upstream: the HTTPS origins
#                  at $TLS_ORIGIN1,$TLS_ORIGIN2 instead of the harness's,
#                  their certificate verified against $TLS_ORIGIN_CA
# EDGEWAY_MAIN, when set, is added to the main file in every variant (a
# buffers block, say: EDGEWAY_MAIN="buffers { disk 8GiB }").
set -euo pipefail
d=${PROXY_DIR:?}
logging="log { access off; level warn }" tracing="" limit="" uselimit="" uptls=""
case ${VARIANT:-off} in
off) ;;
log) logging="log { access on; level warn; access_output $d/access.log }" ;;
log10) logging="log { access on; level warn; access_output $d/access.log; sample 10%; slower_than 1s }" ;;
trace1 | trace100) tracing="tracing { otlp ${OTLP_SINK:?}; sample ${VARIANT#trace}%; service_name edgeway-bench }" ;;
limit) limit="limit bench { rate 1000000000/s; burst 1000000 }" uselimit="limit bench" ;;
tlsup)
	UPSTREAM1=${TLS_ORIGIN1:?} UPSTREAM2=${TLS_ORIGIN2:?}
	uptls="tls { ca ${TLS_ORIGIN_CA:?}; server_name localhost }" ;;
*) echo "bench-edgeway.sh: unknown VARIANT $VARIANT" >&2; exit 2 ;;
esac
# MODE=h2 (h2-peers.sh): TLS with ALPN h2 and http/1.1, the harness's cert.
# H2_SERVER (h2 only): the listener's h2_server, xnet (default) or own.
protocols="http1 h2c" tls="" h2server=""
if [[ ${MODE:-h1} == h2 ]]; then
	protocols="tls http1 h2"
	tls="tls { cert ${TLS_CERT:?} ${TLS_KEY:?} }"
	h2server="h2_server ${H2_SERVER:-xnet}"
fi
cat >"$d/edgeway.conf" <<CONF
${EDGEWAY_MAIN:-}
$logging
$tracing
$limit
$tls
listen bench {
  addr $LISTEN
  protocols $protocols
  $h2server
  idle_timeout 300s
  max_conns 0
}
upstream backend {
  server $UPSTREAM1
  server $UPSTREAM2
  $uptls
  max_idle_conns 1024
  idle_timeout 300s
}
route all {
  match PathPrefix(\`/\`)
  $uselimit
  to backend
}
CONF
exec "${EDGEWAY_BIN:?}" run -c "$d/edgeway.conf"
