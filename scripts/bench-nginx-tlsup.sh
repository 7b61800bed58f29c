#!/usr/bin/env bash
# nginx as a peer of the shared bench harness, with TLS to its upstreams:
# `proxy_pass https://` to the HTTPS origins at $TLS_ORIGIN1,$TLS_ORIGIN2
# (round robin, keepalive 1024, proxy_ssl_session_reuse on, the origin's
# certificate verified against $TLS_ORIGIN_CA as edgeway's `tls { ca }`
# does), one worker, access log off, the peers' timeouts. It listens on
# $LISTEN and runs in the foreground (the harness stops it by its PID).
set -euo pipefail
d=${PROXY_DIR:?}
cat >"$d/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 65536; }
http {
  access_log off;
  client_body_temp_path $d; proxy_temp_path $d; fastcgi_temp_path $d; uwsgi_temp_path $d; scgi_temp_path $d;
  keepalive_timeout 300s;
  keepalive_requests 1000000;
  upstream origins {
    server ${TLS_ORIGIN1:?};
    server ${TLS_ORIGIN2:?};
    keepalive 1024;
    keepalive_timeout 300s;
    keepalive_requests 1000000;
  }
  server {
    listen $LISTEN;
    location / {
      proxy_pass https://origins;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_ssl_session_reuse on;
      proxy_ssl_server_name on;
      proxy_ssl_name localhost;
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate ${TLS_ORIGIN_CA:?};
    }
  }
}
CONF
exec nginx -p "$d/" -e "$d/error.log" -c "$d/nginx.conf"
