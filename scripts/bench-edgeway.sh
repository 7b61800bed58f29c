#!/usr/bin/env bash
# edgeway as a peer of the shared bench harness: writes a configuration for
# $LISTEN -> $UPSTREAM1,$UPSTREAM2 (MODE=h2: over TLS) (round robin, access log off, the same
# timeouts as the peers) into $PROXY_DIR and runs edgeway in the foreground.
set -euo pipefail
d=${PROXY_DIR:?}
# MODE=h2 (h2-peers.sh): TLS with ALPN h2 and http/1.1, the harness's cert.
protocols="http1 h2c" tls=""
if [[ ${MODE:-h1} == h2 ]]; then
	protocols="tls http1 h2"
	tls="tls { cert ${TLS_CERT:?} ${TLS_KEY:?} }"
fi
cat >"$d/edgeway.conf" <<CONF
log { access off; level warn }
$tls
listen bench {
  addr $LISTEN
  protocols $protocols
  idle_timeout 300s
  max_conns 0
}
upstream backend {
  server $UPSTREAM1
  server $UPSTREAM2
  max_idle_conns 1024
  idle_timeout 300s
}
route all {
  match PathPrefix(\`/\`)
  to backend
}
CONF
exec "${EDGEWAY_BIN:?}" run -c "$d/edgeway.conf"
