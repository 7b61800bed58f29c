#!/usr/bin/env bash
# acme-local.sh: try ACME on one machine. It starts pebble (Let's Encrypt's
# test CA, installed by `make tools`) with pebble-challtestsrv as its DNS
# server (every name is 127.0.0.1), then edgeway with an acme block that
# orders a certificate for $NAME from it over HTTP-01, waits until the
# certificate is served, and prints its subject and issuer. With KEEP=1 it
# leaves edgeway running until Ctrl-C.
#
#   make acme-local                     # or: scripts/acme-local.sh
#   HTTP_PORT=5002 TLS_PORT=5001 NAME=demo.acme.test EDGEWAY=bin/edgeway
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=${NAME:-demo.acme.test}
HTTP_PORT=${HTTP_PORT:-5002}   # edgeway's cleartext listener: pebble validates HTTP-01 here
TLS_PORT=${TLS_PORT:-5001}     # edgeway's TLS listener
PEBBLE_PORT=${PEBBLE_PORT:-14000}
DNS_PORT=${DNS_PORT:-8053}
EDGEWAY=${EDGEWAY:-bin/edgeway}
TOOLS=${TOOLS:-bin/tools}
WAIT=${WAIT:-60}

if [[ ! -x $EDGEWAY || ! -x $TOOLS/pebble || ! -x $TOOLS/pebble-challtestsrv ]]; then
	make -s build tools
fi
# pebble's own HTTPS certificate and the root that signs it ship in its module.
pebble_dir=$(go mod download -json "$(sed -n 's/^PEBBLE *?= *\(.*\)\/cmd\/\.\.\.@\(.*\)$/\1@\2/p' Makefile)" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -n $pebble_dir ]] || { echo "acme-local: cannot find pebble's module (go mod download)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

cat >"$work/pebble.json" <<JSON
{"pebble": {"listenAddress": "127.0.0.1:$PEBBLE_PORT", "managementListenAddress": "127.0.0.1:$((PEBBLE_PORT + 1))",
  "certificate": "$pebble_dir/test/certs/localhost/cert.pem", "privateKey": "$pebble_dir/test/certs/localhost/key.pem",
  "httpPort": $HTTP_PORT, "tlsPort": $TLS_PORT, "ocspResponderURL": ""}}
JSON
"$TOOLS/pebble-challtestsrv" -dnsserver "127.0.0.1:$DNS_PORT" -defaultIPv4 127.0.0.1 -defaultIPv6 "" \
	-http01 "" -https01 "" -tlsalpn01 "" -management "127.0.0.1:$((DNS_PORT + 1))" >"$work/challtestsrv.log" 2>&1 &
pids+=($!)
PEBBLE_VA_NOSLEEP=1 "$TOOLS/pebble" -config "$work/pebble.json" -dnsserver "127.0.0.1:$DNS_PORT" >"$work/pebble.log" 2>&1 &
pids+=($!)

cat >"$work/edgeway.conf" <<CONF
listen web { addr 127.0.0.1:$HTTP_PORT; protocols http1 }
listen websecure { addr 127.0.0.1:$TLS_PORT; protocols tls http1 h2 }
tls {
  acme {
    directory https://127.0.0.1:$PEBBLE_PORT/dir
    ca_root $pebble_dir/test/certs/pebble.minica.pem
    storage $work/acme
    email ops@example.com
    accept_terms on
    challenges http-01
  }
}
route site {
  match Host(\`$NAME\`)
  acme on
  respond 200 "served over TLS with a certificate from pebble\n"
}
CONF
for _ in $(seq 50); do curl -sk "https://127.0.0.1:$PEBBLE_PORT/dir" >/dev/null && break; sleep 0.2; done
"$EDGEWAY" run -c "$work/edgeway.conf" >"$work/edgeway.log" 2>&1 &
pids+=($!)

echo "acme-local: edgeway orders a certificate for $NAME from pebble (logs in $work)"
for _ in $(seq $((WAIT * 5))); do
	grep -q 'acme: certificate served' "$work/edgeway.log" && break
	kill -0 "${pids[2]}" 2>/dev/null || { cat "$work/edgeway.log" >&2; exit 1; }
	sleep 0.2
done
if ! grep -q 'acme: certificate served' "$work/edgeway.log"; then
	echo "acme-local: no certificate after ${WAIT}s; edgeway's log:" >&2
	cat "$work/edgeway.log" >&2
	exit 1
fi
# pebble's issuing root, to check the served chain against it.
curl -sk "https://127.0.0.1:$((PEBBLE_PORT + 1))/roots/0" >"$work/root.pem"
curl -sS --cacert "$work/root.pem" --resolve "$NAME:$TLS_PORT:127.0.0.1" "https://$NAME:$TLS_PORT/"
openssl s_client -connect "127.0.0.1:$TLS_PORT" -servername "$NAME" </dev/null 2>/dev/null |
	openssl x509 -noout -ext subjectAltName -issuer
if [[ ${KEEP:-0} == 1 ]]; then
	echo "acme-local: serving; try: curl --cacert $work/root.pem --resolve $NAME:$TLS_PORT:127.0.0.1 https://$NAME:$TLS_PORT/   (Ctrl-C ends)"
	wait "${pids[2]}"
fi
