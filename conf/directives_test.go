package conf

import (
	"strings"
	"testing"
	"time"
)

// A valid skeleton the directive tests add one line to.
const (
	baseListen   = "listen web {\n  addr :80\n  %s\n}\nupstream u { server a:1 }\nroute r { match Path(`/`); to u }\n"
	baseUpstream = "listen web { addr :80 }\nupstream u {\n  server a:1\n  %s\n}\nroute r { match Path(`/`); to u }\n"
	baseRoute    = "listen web { addr :80 }\nupstream u { server a:1 }\nroute r {\n  match Path(`/`)\n  %s\n}\n"
	baseMirror   = "listen web { addr :80 }\nupstream u { server a:1 }\nupstream m { server b:1 }\nroute r {\n  match Path(`/`)\n  %s\n}\n"
	baseTop      = "listen web { addr :80 }\nupstream u { server a:1 }\nroute r { match Path(`/`); to u }\n%s\n"
)

func TestDirectives(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		base  string
		line  string
		check func(*Config) bool // for valid lines
		err   string             // "line:col: message prefix" for invalid ones
	}{
		// main file
		{desc: "shutdown_grace", base: baseTop, line: "shutdown_grace 1m30s", check: func(c *Config) bool { return c.ShutdownGrace == 90*time.Second }},
		{desc: "shutdown_grace zero", base: baseTop, line: "shutdown_grace 0s", check: func(c *Config) bool { return c.ShutdownGrace == 0 }},
		{desc: "shutdown_grace bad", base: baseTop, line: "shutdown_grace 10", err: `4:16: shutdown_grace: invalid duration "10"`},
		{desc: "admin", base: baseTop, line: "admin { listen 127.0.0.1:9999; token_file /t }", check: func(c *Config) bool { return c.Admin.Listen == "127.0.0.1:9999" && c.Admin.TokenFile == "/t" }},
		{desc: "admin bad address", base: baseTop, line: "admin { listen localhost; token_file /t }", err: `4:16: listen: invalid address "localhost"`},
		{desc: "admin without token_file", base: baseTop, line: "admin { listen 127.0.0.1:9999 }", err: `4:1: admin block has no token_file`},
		{desc: "no buffers block", base: baseTop, line: "", check: func(c *Config) bool { return c.Buffers.Memory == 0 && c.Buffers.Dir == "" }},
		{desc: "buffers", base: baseTop, line: "buffers { memory 256MiB; disk 10GiB; request_memory 2MiB; dir /var/tmp/edgeway }", check: func(c *Config) bool {
			b := c.Buffers
			return b.Memory == 256<<20 && b.Disk == 10<<30 && b.RequestMemory == 2<<20 && b.Dir == "/var/tmp/edgeway"
		}},
		{desc: "buffers dir is a writable dir", base: baseTop, line: "buffers { dir /srv/tmp }", check: func(c *Config) bool {
			return len(c.Paths) == 1 && c.Paths[0] == PathRef{Directive: "dir", Path: "/srv/tmp", Use: WritableDir, Pos: c.Paths[0].Pos, Source: c.Paths[0].Source}
		}},
		{desc: "buffers memory too small", base: baseTop, line: "buffers { memory 1KiB }", err: `4:18: memory: 1KiB is out of range (expected at least 64KiB)`},
		{desc: "buffers disk bad", base: baseTop, line: "buffers { disk lots }", err: `4:16: disk: `},
		{desc: "buffers request_memory over memory", base: baseTop, line: "buffers { memory 1MiB; request_memory 2MiB }", err: `4:39: request_memory: 2MiB is more than the buffers' memory (1MiB)`},
		{desc: "buffers request_memory over default memory", base: baseTop, line: "buffers { request_memory 128MiB }", err: `4:26: request_memory: 128MiB is more than the buffers' memory (32MiB)`},
		{desc: "buffers in a block", base: baseListen, line: "buffers { memory 1MiB }", err: `3:3: unknown directive "buffers" in listen block`},
		{desc: "body_timeout", base: baseListen, line: "body_timeout 2s", check: func(c *Config) bool { return c.Listeners[0].BodyTimeout == 2*time.Second }},
		{desc: "body_timeout default", base: baseListen, line: "", check: func(c *Config) bool { return c.Listeners[0].BodyTimeout == 10*time.Second }},
		{desc: "body_timeout off", base: baseListen, line: "body_timeout off", check: func(c *Config) bool { return c.Listeners[0].BodyTimeout == NoBodyTimeout }},
		{desc: "body_min_rate", base: baseListen, line: "body_min_rate 1KiB/s 2s", check: func(c *Config) bool {
			return c.Listeners[0].BodyMinRate == MinRate{Bytes: 1024, Window: 2 * time.Second}
		}},
		{desc: "body_min_rate default window", base: baseListen, line: "body_min_rate 100/s", check: func(c *Config) bool {
			return c.Listeners[0].BodyMinRate == MinRate{Bytes: 100, Window: DefaultBodyMinRateWindow}
		}},
		{desc: "body_min_rate default", base: baseListen, line: "", check: func(c *Config) bool {
			return c.Listeners[0].BodyMinRate.Effective() == MinRate{Bytes: 500, Window: 10 * time.Second}
		}},
		{desc: "body_min_rate off", base: baseListen, line: "body_min_rate off", check: func(c *Config) bool { return c.Listeners[0].BodyMinRate.Effective() == MinRate{} }},
		{desc: "body_min_rate not a rate", base: baseListen, line: "body_min_rate 1KiB", err: `3:17: body_min_rate: "1KiB" is not a rate`},
		{desc: "body_min_rate short window", base: baseListen, line: "body_min_rate 1KiB/s 10ms", err: `3:24: body_min_rate: window "10ms" is not a duration of at least 1s`},
		{desc: "body_timeout zero", base: baseListen, line: "body_timeout 0s", err: `3:16: body_timeout: must be more than 0`},
		{desc: "request_buffering default", base: baseRoute, line: "to u", check: func(c *Config) bool { return !c.Routes[0].StreamRequestBody }},
		{desc: "request_buffering off", base: baseRoute, line: "to u; request_buffering off", check: func(c *Config) bool { return c.Routes[0].StreamRequestBody }},
		{desc: "request_buffering on", base: baseRoute, line: "to u; request_buffering on", check: func(c *Config) bool { return !c.Routes[0].StreamRequestBody }},
		{desc: "request_buffering bad", base: baseRoute, line: "to u; request_buffering maybe", err: `5:27: request_buffering: `},
		{desc: "response_buffering default", base: baseRoute, line: "to u", check: func(c *Config) bool { return !c.Routes[0].StreamResponseBody }},
		{desc: "response_buffering off", base: baseRoute, line: "to u; response_buffering off", check: func(c *Config) bool { return c.Routes[0].StreamResponseBody }},
		{desc: "response_buffering bad", base: baseRoute, line: "to u; response_buffering later", err: `5:28: response_buffering: `},
		{desc: "buffers response sizes", base: baseTop, line: "buffers { response_memory 256KiB; response_max 8MiB }", check: func(c *Config) bool {
			return c.Buffers.ResponseMemory == 256<<10 && c.Buffers.ResponseMax == 8<<20
		}},
		{desc: "buffers response_max off", base: baseTop, line: "buffers { response_max off }", check: func(c *Config) bool { return c.Buffers.ResponseMax == NoResponseMax }},
		{desc: "buffers response_max too small", base: baseTop, line: "buffers { response_max 1KiB }", err: `4:24: response_max: 1KiB is out of range (expected at least 64KiB)`},
		{desc: "buffers response_memory over memory", base: baseTop, line: "buffers { memory 1MiB; response_memory 2MiB }", err: `4:40: response_memory: 2MiB is more than the buffers' memory (1MiB)`},
		{desc: "shutdown_delay", base: baseTop, line: "shutdown_delay 30s", check: func(c *Config) bool { return c.ShutdownDelay == 30*time.Second }},
		{desc: "shutdown_delay bad", base: baseTop, line: "shutdown_delay soon", err: `4:16: shutdown_delay: invalid duration "soon"`},
		{desc: "log access_output", base: baseTop, line: "log { output /var/log/e.log; access_output /var/log/access.log }", check: func(c *Config) bool {
			return c.Log.Output == "/var/log/e.log" && c.Log.AccessOutput == "/var/log/access.log"
		}},
		{desc: "log access_output empty", base: baseTop, line: `log { access_output "" }`, err: `4:21: access_output: expected a file path`},
		{desc: "admin collides with listener", base: baseTop, line: "admin { listen 127.0.0.1:80; token_file /t }", err: `4:16: the admin API listens on 127.0.0.1:80, already used by listener "web"`},
		{desc: "log", base: baseTop, line: "log { access off; format json; output stdout; level debug }", check: func(c *Config) bool {
			return c.Log == Log{Access: false, Format: "json", Output: "stdout", Level: "debug", Sample: 1}
		}},
		{desc: "log access_query", base: baseTop, line: "log { access_query redact }", check: func(c *Config) bool { return c.Log.AccessQuery == "redact" }},
		{desc: "log sample", base: baseTop, line: "log { sample 0.5%; slower_than 1s }", check: func(c *Config) bool { return c.Log.Sample == 0.005 && c.Log.SlowerThan == time.Second }},
		{desc: "log sample none", base: baseTop, line: "log { sample 0% }", check: func(c *Config) bool { return c.Log.Sample == 0 }},
		{desc: "log sample bad", base: baseTop, line: "log { sample 10 }", err: `4:14: sample: invalid percentage "10"`},
		{desc: "log sample over", base: baseTop, line: "log { sample 101% }", err: `4:14: sample: 101% is out of range`},
		{desc: "log access_query bad", base: baseTop, line: "log { access_query hide }", err: `4:20: unknown access_query "hide" (expected keep, redact, drop)`},
		{desc: "log format bad", base: baseTop, line: "log { format yaml }", err: `4:14: unknown log format "yaml" (expected json, text)`},
		{desc: "log level bad", base: baseTop, line: "log { level trace }", err: `4:13: unknown log level "trace"`},
		{desc: "no tracing block", base: baseTop, line: "", check: func(c *Config) bool { return c.Tracing == nil }},
		{desc: "tracing", base: baseTop, line: "tracing { otlp https://otel.example:4318/v1/traces; sample 1%; service_name edge-eu }", check: func(c *Config) bool {
			return *c.Tracing == Tracing{OTLP: "https://otel.example:4318/v1/traces", Sample: 0.01, ServiceName: "edge-eu"}
		}},
		{desc: "tracing defaults", base: baseTop, line: "tracing { otlp http://127.0.0.1:4318 }", check: func(c *Config) bool {
			return *c.Tracing == Tracing{OTLP: "http://127.0.0.1:4318/v1/traces", Sample: 1, ServiceName: "edgeway"}
		}},
		{desc: "tracing own path", base: baseTop, line: "tracing { otlp http://otel/collector/traces }", check: func(c *Config) bool { return c.Tracing.OTLP == "http://otel/collector/traces" }},
		{desc: "tracing sample decimal", base: baseTop, line: "tracing { otlp http://otel; sample 0.25% }", check: func(c *Config) bool { return c.Tracing.Sample == 0.0025 }},
		{desc: "tracing sample zero", base: baseTop, line: "tracing { otlp http://otel; sample 0% }", check: func(c *Config) bool { return c.Tracing.Sample == 0 }},
		{desc: "tracing sample without %", base: baseTop, line: "tracing { otlp http://otel; sample 50 }", check: func(c *Config) bool { return c.Tracing.Sample == 0.5 }},
		{desc: "tracing sample over 100", base: baseTop, line: "tracing { otlp http://otel; sample 101% }", err: `4:36: sample: 101% is out of range (expected 0% to 100%)`},
		{desc: "tracing sample bad", base: baseTop, line: "tracing { otlp http://otel; sample NaN% }", err: `4:36: sample: invalid percentage "NaN%"`},
		{desc: "tracing sample exponent", base: baseTop, line: "tracing { otlp http://otel; sample 1e-3 }", err: `4:36: sample: invalid percentage "1e-3"`},
		{desc: "tracing sample negative", base: baseTop, line: "tracing { otlp http://otel; sample -1% }", err: `4:36: sample: invalid percentage "-1%"`},
		{desc: "tracing without otlp", base: baseTop, line: "tracing { sample 1% }", err: `4:1: tracing block has no otlp`},
		{desc: "tracing otlp scheme", base: baseTop, line: "tracing { otlp grpc://otel:4317 }", err: `4:16: otlp: URL "grpc://otel:4317" must start with http:// or https://`},
		{desc: "tracing otlp no host", base: baseTop, line: "tracing { otlp http:///v1/traces }", err: `4:16: otlp: URL "http:///v1/traces" has no host`},
		{desc: "tracing otlp query", base: baseTop, line: "tracing { otlp http://otel/v1/traces?x=1 }", err: `4:16: otlp: URL "http://otel/v1/traces?x=1": expected scheme://host[:port][/path]`},
		{desc: "tracing otlp port", base: baseTop, line: "tracing { otlp http://otel:99999 }", err: `4:16: otlp: URL "http://otel:99999": invalid port "99999"`},
		{desc: "tracing service_name empty", base: baseTop, line: `tracing { otlp http://otel; service_name "" }`, err: `4:42: service_name: invalid name ""`},
		{desc: "tracing unknown", base: baseTop, line: "tracing { otlp http://otel; exporter grpc }", err: `4:29: unknown directive "exporter" in tracing block`},
		{desc: "duplicate tracing", base: baseTop, line: "tracing { otlp http://otel }\ntracing { otlp http://otel }", err: `5:1: duplicate "tracing" in main file`},
		{desc: "runtime", base: baseTop, line: "runtime { gomaxprocs 4; gomemlimit 2GiB; gc_percent 200 }", check: func(c *Config) bool {
			return c.Runtime == Runtime{GOMAXPROCS: 4, MemoryLimit: 2 << 30, GCPercent: 200}
		}},
		{desc: "runtime auto", base: baseTop, line: "runtime { gomaxprocs auto }", check: func(c *Config) bool { return c.Runtime.GOMAXPROCS == 0 }},
		{desc: "runtime gc off", base: baseTop, line: "runtime { gomemlimit 1GiB; gc_percent off }", check: func(c *Config) bool { return c.Runtime.GCPercent == -1 }},
		{desc: "runtime gc off without limit", base: baseTop, line: "runtime { gc_percent off }", err: `4:22: gc_percent: off needs gomemlimit`},
		{desc: "runtime gc zero", base: baseTop, line: "runtime { gc_percent 0 }", err: `4:22: gc_percent: 0 is out of range`},
		{desc: "runtime gomaxprocs zero", base: baseTop, line: "runtime { gomaxprocs 0 }", err: `4:22: gomaxprocs: 0 is out of range (expected 1 to 1024)`},
		{desc: "runtime gomaxprocs bad", base: baseTop, line: "runtime { gomaxprocs all }", err: `4:22: gomaxprocs: invalid value "all" (expected a whole number or auto)`},
		{desc: "runtime gomemlimit small", base: baseTop, line: "runtime { gomemlimit 1KiB }", err: `4:22: gomemlimit: 1KiB is out of range (expected at least 1MiB)`},
		{desc: "runtime unknown", base: baseTop, line: "runtime { gogc 100 }", err: `4:11: unknown directive "gogc" in runtime block`},
		{desc: "duplicate log", base: baseTop, line: "log { }\nlog { }", err: `5:1: duplicate "log" in main file`},
		// listen
		{desc: "addr with host name", base: baseListen, line: "", check: func(c *Config) bool { return c.Listeners[0].Addr == ":80" }},
		{desc: "addr bad", base: "listen web {\n  addr 80\n}\n", err: `2:8: addr: invalid address "80"`},
		{desc: "protocols", base: baseListen, line: "protocols h2c", check: func(c *Config) bool { return strings.Join(c.Listeners[0].Protocols, ",") == "h2c" }},
		{desc: "protocols twice", base: baseListen, line: "protocols h2c h2c", err: `3:17: protocol "h2c" is listed twice`},
		{desc: "read_header_timeout", base: baseListen, line: "read_header_timeout 250ms", check: func(c *Config) bool { return c.Listeners[0].ReadHeaderTimeout == 250*time.Millisecond }},
		{desc: "read_header_timeout zero", base: baseListen, line: "read_header_timeout 0s", err: `3:23: read_header_timeout: must be more than 0`},
		{desc: "write_timeout", base: baseListen, line: "write_timeout 30s", check: func(c *Config) bool { return c.Listeners[0].WriteTimeout == 30*time.Second }},
		{desc: "write_timeout off", base: baseListen, line: "write_timeout off", check: func(c *Config) bool { return c.Listeners[0].WriteTimeout == 0 }},
		{desc: "write_timeout default", base: baseListen, line: "", check: func(c *Config) bool { return c.Listeners[0].WriteTimeout == 60*time.Second }},
		{desc: "idle_timeout", base: baseListen, line: "idle_timeout 2m", check: func(c *Config) bool { return c.Listeners[0].IdleTimeout == 2*time.Minute }},
		{desc: "max_header_bytes", base: baseListen, line: "max_header_bytes 1MiB", check: func(c *Config) bool { return c.Listeners[0].MaxHeaderBytes == 1<<20 }},
		{desc: "max_header_bytes too big", base: baseListen, line: "max_header_bytes 1048577", err: `3:20: max_header_bytes: 1048577 is out of range`},
		{desc: "max_header_bytes zero", base: baseListen, line: "max_header_bytes 0", err: `3:20: max_header_bytes: 0 is out of range`},
		{desc: "max_body_bytes default", base: baseListen, line: "", check: func(c *Config) bool { return c.Listeners[0].MaxBodyBytes == 100<<20 }},
		{desc: "max_body_bytes", base: baseListen, line: "max_body_bytes 1GiB", check: func(c *Config) bool { return c.Listeners[0].MaxBodyBytes == 1<<30 }},
		{desc: "max_body_bytes one byte", base: baseListen, line: "max_body_bytes 1", check: func(c *Config) bool { return c.Listeners[0].MaxBodyBytes == 1 }},
		{desc: "max_body_bytes unlimited", base: baseListen, line: "max_body_bytes unlimited", check: func(c *Config) bool { return c.Listeners[0].MaxBodyBytes == -1 }},
		{desc: "max_body_bytes zero", base: baseListen, line: "max_body_bytes 0", err: `3:18: max_body_bytes: must be at least 1 byte, got 0`},
		{desc: "max_body_bytes zero with unit", base: baseListen, line: "max_body_bytes 0MiB", err: `3:18: max_body_bytes: must be at least 1 byte, got 0MiB`},
		{desc: "max_body_bytes negative", base: baseListen, line: "max_body_bytes -1", err: `3:18: max_body_bytes: invalid size "-1"`},
		{desc: "max_body_bytes bad", base: baseListen, line: "max_body_bytes lots", err: `3:18: max_body_bytes: invalid size "lots"`},
		{desc: "max_body_bytes two args", base: baseListen, line: "max_body_bytes 1 2", err: `3:20: expected a new line or ";" after max_body_bytes SIZE|unlimited`},
		{desc: "max_conns", base: baseListen, line: "max_conns 100", check: func(c *Config) bool { return c.Listeners[0].MaxConns == 100 }},
		{desc: "max_conns bad", base: baseListen, line: "max_conns many", err: `3:13: max_conns: invalid number "many"`},
		{desc: "backlog", base: baseListen, line: "backlog 4096", check: func(c *Config) bool { return c.Listeners[0].Backlog == 4096 }},
		{desc: "reuseport", base: baseListen, line: "reuseport on", check: func(c *Config) bool { return c.Listeners[0].ReusePort }},
		{desc: "nodelay", base: baseListen, line: "nodelay off", check: func(c *Config) bool { return !c.Listeners[0].NoDelay }},
		{desc: "accept_loops", base: baseListen, line: "reuseport on; accept_loops 4", check: func(c *Config) bool { return c.Listeners[0].AcceptLoops == 4 }},
		{desc: "accept_loops without reuseport", base: baseListen, line: "accept_loops 4", err: "3:16: accept_loops: 4 sockets need `reuseport on`"},
		{desc: "accept_loops one without reuseport", base: baseListen, line: "accept_loops 1", check: func(c *Config) bool { return c.Listeners[0].AcceptLoops == 1 }},
		{desc: "accept_loops too many", base: baseListen, line: "reuseport on; accept_loops 257", err: `3:30: accept_loops: 257 is out of range (expected 0 to 256)`},
		{desc: "defer_accept", base: baseListen, line: "defer_accept 5s", check: func(c *Config) bool { return c.Listeners[0].DeferAccept == 5*time.Second }},
		{desc: "defer_accept off", base: baseListen, line: "defer_accept off", check: func(c *Config) bool { return c.Listeners[0].DeferAccept == 0 }},
		{desc: "defer_accept fraction", base: baseListen, line: "defer_accept 1500ms", err: `3:16: defer_accept: 1500ms is not a whole number of seconds`},
		{desc: "defer_accept too long", base: baseListen, line: "defer_accept 2m", err: `3:16: defer_accept: 2m is out of range (expected at most 1m0s)`},
		{desc: "tcp_fastopen", base: baseListen, line: "tcp_fastopen 256", check: func(c *Config) bool { return c.Listeners[0].FastOpen == 256 }},
		{desc: "tcp_fastopen off", base: baseListen, line: "tcp_fastopen off", check: func(c *Config) bool { return c.Listeners[0].FastOpen == 0 }},
		{desc: "tcp_fastopen zero", base: baseListen, line: "tcp_fastopen 0", err: `3:16: tcp_fastopen: 0 is out of range (expected 1 to 65535)`},
		{desc: "tcp_fastopen bad", base: baseListen, line: "tcp_fastopen yes", err: `3:16: tcp_fastopen: invalid value "yes" (expected a whole number or off)`},
		{desc: "keepalive off", base: baseListen, line: "keepalive off", check: func(c *Config) bool { return !c.Listeners[0].KeepAlive }},
		{desc: "keepalive_idle", base: baseListen, line: "keepalive_idle 30s", check: func(c *Config) bool { return c.Listeners[0].KeepAliveIdle == 30*time.Second }},
		{desc: "keepalive_idle system default", base: baseListen, line: "keepalive_idle 0s", check: func(c *Config) bool { return c.Listeners[0].KeepAliveIdle == 0 }},
		{desc: "keepalive_idle too long", base: baseListen, line: "keepalive_idle 32768s", err: `3:18: keepalive_idle: 32768s is out of range`},
		{desc: "keepalive_interval", base: baseListen, line: "keepalive_interval 5s", check: func(c *Config) bool { return c.Listeners[0].KeepAliveInterval == 5*time.Second }},
		{desc: "keepalive_interval fraction", base: baseListen, line: "keepalive_interval 0.5s", err: `3:22: keepalive_interval: 0.5s is not a whole number of seconds`},
		{desc: "keepalive_count", base: baseListen, line: "keepalive_count 9", check: func(c *Config) bool { return c.Listeners[0].KeepAliveCount == 9 }},
		{desc: "keepalive_count too many", base: baseListen, line: "keepalive_count 128", err: `3:19: keepalive_count: 128 is out of range (expected 0 to 127)`},
		{desc: "rcvbuf", base: baseListen, line: "rcvbuf 256KiB", check: func(c *Config) bool { return c.Listeners[0].RecvBuffer == 256<<10 }},
		{desc: "sndbuf", base: baseListen, line: "sndbuf 1MiB", check: func(c *Config) bool { return c.Listeners[0].SendBuffer == 1<<20 }},
		{desc: "rcvbuf too big", base: baseListen, line: "rcvbuf 65MiB", err: `3:10: rcvbuf: 65MiB is out of range (expected 0 to 64MiB)`},
		{desc: "sndbuf bad", base: baseListen, line: "sndbuf lots", err: `3:10: sndbuf: invalid size "lots"`},
		{desc: "normalize", base: baseListen, line: "normalize off", check: func(c *Config) bool { return !c.Listeners[0].Normalize }},
		{desc: "trusted_proxies bad", base: baseListen, line: "trusted_proxies 10.0.0.0/8 nope", err: `3:30: invalid trusted proxy "nope"`},
		{desc: "not_found_body", base: baseListen, line: `not_found_body "no\n"`, check: func(c *Config) bool { return c.Listeners[0].NotFoundBody == "no\n" }},
		{desc: "listener name bad", base: "listen w/x { addr :80 }\n", err: `1:8: invalid listener name "w/x"`},
		{desc: "duplicate listener", base: "listen w { addr :80 }\nlisten w { addr :81 }\n", err: `2:8: duplicate listener name "w" (first defined at main.conf:1:8)`},
		{desc: "same address", base: "listen a { addr 127.0.0.1:80 }\nlisten b { addr 127.0.0.1:80 }\n", err: `2:17: listener "b" listens on 127.0.0.1:80, already used by listener "a"`},
		{desc: "port zero never collides", base: "listen a { addr :0 }\nlisten b { addr :0 }\n", check: func(c *Config) bool { return len(c.Listeners) == 2 }},
		// upstream
		{desc: "server weight", base: baseUpstream, line: "server b.example.com:8080 weight 0", check: func(c *Config) bool { return c.Upstreams[0].Servers[1].Weight == 0 }},
		{desc: "server ipv6", base: baseUpstream, line: "server [::1]:8080", check: func(c *Config) bool { return c.Upstreams[0].Servers[1].Addr == "[::1]:8080" }},
		{desc: "server no port", base: baseUpstream, line: "server b.example.com", err: `4:10: server: invalid address "b.example.com"`},
		{desc: "server bad host", base: baseUpstream, line: "server bad_host!:80", err: `4:10: server: invalid host "bad_host!"`},
		{desc: "server twice", base: baseUpstream, line: "server a:1", err: `4:10: server a:1 is listed twice in upstream "u"`},
		{desc: "weight negative", base: baseUpstream, line: "server b:1 weight -1", err: `4:21: weight: -1 is out of range`},
		{desc: "connect_timeout", base: baseUpstream, line: "connect_timeout 1s", check: func(c *Config) bool { return c.Upstreams[0].ConnectTimeout == time.Second }},
		{desc: "response_timeout", base: baseUpstream, line: "response_timeout 2s", check: func(c *Config) bool { return c.Upstreams[0].ResponseTimeout == 2*time.Second }},
		{desc: "upstream idle_timeout", base: baseUpstream, line: "idle_timeout 3s", check: func(c *Config) bool { return c.Upstreams[0].IdleTimeout == 3*time.Second }},
		{desc: "max_idle_conns", base: baseUpstream, line: "max_idle_conns 0", check: func(c *Config) bool { return c.Upstreams[0].MaxIdleConns == 0 }},
		{desc: "upstream without servers", base: "upstream u { connect_timeout 1s }\n", err: `1:1: upstream "u" has no servers`},
		// route
		{desc: "to", base: baseRoute, line: "to u", check: func(c *Config) bool { return c.Routes[0].Upstream == "u" }},
		{desc: "to unknown", base: baseRoute, line: "to v", err: `5:6: unknown upstream "v" (defined: u)`},
		{desc: "mirror", base: baseMirror, line: "to u; mirror m 10%", check: func(c *Config) bool {
			ms := c.Routes[0].Mirrors
			return len(ms) == 1 && ms[0].Upstream == "m" && ms[0].Percent == 10
		}},
		{desc: "mirror all", base: baseMirror, line: "mirror m; to u", check: func(c *Config) bool { return c.Routes[0].Mirrors[0].Percent == 100 }},
		{desc: "mirror unknown", base: baseMirror, line: "to u; mirror v", err: `6:16: unknown upstream "v" (defined: u, m)`},
		{desc: "mirror own upstream", base: baseMirror, line: "mirror u; to u", err: `6:10: mirror "u" is the route's own upstream`},
		{desc: "mirror twice", base: baseMirror, line: "to u; mirror m 5%; mirror m", err: `6:29: mirror "m" is listed twice`},
		{desc: "mirror percent", base: baseMirror, line: "to u; mirror m 0%", err: `6:18: mirror: 0% is out of range`},
		{desc: "mirror percent word", base: baseMirror, line: "to u; mirror m half", err: `6:18: mirror: invalid percentage "half"`},
		{desc: "mirror without to", base: baseMirror, line: "respond 200; mirror m", err: `6:23: mirror "m" on route "r", which does not forward`},
		{desc: "priority", base: baseRoute, line: "to u; priority -3", check: func(c *Config) bool { return c.Routes[0].Priority == -3 }},
		{desc: "priority bad", base: baseRoute, line: "to u; priority high", err: `5:18: priority: invalid number "high"`},
		{desc: "listeners", base: baseRoute, line: "to u; listeners web", check: func(c *Config) bool { return c.Routes[0].Listeners[0] == "web" }},
		{desc: "listeners unknown", base: baseRoute, line: "to u; listeners web api", err: `5:23: unknown listener "api" (defined: web)`},
		{desc: "strip_prefix", base: baseRoute, line: "to u; strip_prefix /api", check: mw(StripPrefix, "", "/api", 0)},
		{desc: "add_prefix", base: baseRoute, line: "to u; add_prefix /v2", check: mw(AddPrefix, "", "/v2", 0)},
		{desc: "add_prefix bad", base: baseRoute, line: "to u; add_prefix v2", err: `5:20: add_prefix: expected a path starting with "/"`},
		{desc: "set_header canonical", base: baseRoute, line: "to u; set_header x-forwarded-app edge", check: mw(SetRequestHeader, "X-Forwarded-App", "edge", 0)},
		{desc: "remove_header", base: baseRoute, line: "to u; remove_header cookie", check: mw(RemoveRequestHeader, "Cookie", "", 0)},
		{desc: "set_response_header", base: baseRoute, line: `to u; set_response_header cache-control "no-store, private"`, check: mw(SetResponseHeader, "Cache-Control", "no-store, private", 0)},
		{desc: "remove_response_header", base: baseRoute, line: "to u; remove_response_header server", check: mw(RemoveResponseHeader, "Server", "", 0)},
		{desc: "header name bad", base: baseRoute, line: "to u; remove_header X:Y", err: `5:23: remove_header: invalid header name "X:Y"`},
		{desc: "redirect", base: baseRoute, line: `redirect 307 "/new$path"`, check: mw(Redirect, "", "/new$path", 307)},
		{desc: "redirect code", base: baseRoute, line: `redirect 200 /x`, err: `5:12: redirect: invalid status code "200"`},
		{desc: "respond", base: baseRoute, line: `respond 503 "down\n"`, check: mw(Respond, "", "down\n", 503)},
		{desc: "respond code", base: baseRoute, line: `respond 600`, err: `5:11: respond: invalid status code "600" (expected a final status from 200 to 599)`},
		{desc: "respond 1xx", base: baseRoute, line: `respond 101 "x"`, err: `5:11: respond: invalid status code "101" (expected a final status from 200 to 599)`},
		{desc: "respond 204 with body", base: baseRoute, line: `respond 204 "x"`, err: `5:15: respond: status 204 has no body; remove "x"`},
		{desc: "respond and redirect", base: baseRoute, line: "respond 200; redirect 302 /x", err: `5:16: route "r" already answers with ` + "`respond`"},
		{desc: "to and respond", base: baseRoute, line: "to u; respond 200", err: `5:9: route "r" has both ` + "`to` and `respond`"},
		{desc: "neither", base: baseRoute, line: "listeners web", err: `3:1: route "r" has neither`},
		{desc: "invalid rule", base: "route r {\n  match Hots(`a`)\n  respond 200\n}\n", err: `2:9: invalid match rule: `},
		{desc: "duplicate route", base: baseRoute + "route r { match Path(`/`); to u }\n", line: "to u", err: `7:7: duplicate route name "r"`},
		{desc: "cors", base: baseRoute, line: "to u; cors { origins https://App.example.com:8443 http://b.test; methods GET PUT; headers x-token; expose_headers x-request-id; credentials on; max_age 10m }", check: func(c *Config) bool {
			cs := c.Routes[0].CORS
			return cs != nil && len(cs.Origins) == 2 && cs.Origins[0] == "https://app.example.com:8443" && cs.Methods[1] == "PUT" &&
				cs.Headers[0] == "X-Token" && cs.ExposeHeaders[0] == "X-Request-Id" && cs.Credentials && cs.MaxAge == 10*time.Minute
		}},
		{desc: "cors defaults", base: baseRoute, line: "to u; cors { origins * }", check: func(c *Config) bool {
			cs := c.Routes[0].CORS
			return cs.AnyOrigin && len(cs.Methods) == 3 && !cs.Credentials
		}},
		{desc: "cors without origins", base: baseRoute, line: "to u; cors { methods GET }", err: `5:9: cors block has no origins`},
		{desc: "cors any with credentials", base: baseRoute, line: "to u; cors { origins *; credentials on }", err: "5:9: cors: `origins *` cannot go with `credentials on`"},
		{desc: "cors origin with a path", base: baseRoute, line: "to u; cors { origins https://a.test/app }", err: `5:24: origins: invalid origin "https://a.test/app"`},
		{desc: "error_page inline", base: baseRoute, line: `to u; error_page 502 503 "down: $status"`, check: func(c *Config) bool {
			p := c.Routes[0].ErrorPages
			return len(p) == 1 && p[0].Codes[1] == 503 && p[0].Body == "down: $status" && p[0].ContentType == "text/plain; charset=utf-8"
		}},
		{desc: "error_page listener", base: baseListen, line: `error_page 404 "none"`, check: func(c *Config) bool { return c.Listeners[0].ErrorPages[0].Codes[0] == 404 }},
		{desc: "error_page bad code", base: baseRoute, line: `to u; error_page 302 "x"`, err: `5:20: error_page: invalid status code "302" (expected an error status from 400 to 599)`},
		{desc: "error_page no page", base: baseRoute, line: `to u; error_page 502 503`, err: `5:24: error_page: expected ` + "`file PATH`"},
		{desc: "error_page no code", base: baseRoute, line: `to u; error_page file x.html`, err: `5:20: error_page: expected status codes before the page`},
		{desc: "limit", base: baseTop, line: "limit api { rate 600/m; burst 50; key header X-Api-Key; max_keys 5000 }\nroute r2 { match Path(`/x`); limit api; to u }", check: func(c *Config) bool {
			l := c.Limits[0]
			return l.Name == "api" && l.Rate == 600 && l.Per == time.Minute && l.Burst == 50 && l.Key == "header" && l.KeyName == "X-Api-Key" &&
				l.MaxKeys == 5000 && c.Routes[1].Limits[0] == "api"
		}},
		{desc: "limit defaults", base: baseTop, line: "limit a { rate 10/s }", check: func(c *Config) bool {
			l := c.Limits[0]
			return l.Burst == 10 && l.Key == "client_ip" && l.MaxKeys == 100000 && l.Per == time.Second
		}},
		{desc: "limit unknown", base: baseRoute, line: "to u; limit nope", err: `5:15: unknown limit "nope" (none is defined)`},
		{desc: "limit bad rate", base: baseTop, line: "limit a { rate 10/day }", err: `4:16: rate: invalid rate "10/day"`},
		{desc: "limit no rate", base: baseTop, line: "limit a { burst 5 }", err: `4:1: limit "a" has no rate and no max_in_flight`},
		{desc: "limit in flight only", base: baseTop, line: "limit a { max_in_flight 8; key route }", check: func(c *Config) bool {
			return c.Limits[0].MaxInFlight == 8 && c.Limits[0].Rate == 0 && c.Limits[0].Key == "route"
		}},
		{desc: "limit key without name", base: baseTop, line: "limit a { rate 1/s; key cookie }", err: `4:25: key cookie: expected a name`},
		{desc: "compress defaults", base: baseRoute, line: "to u; compress {}", check: func(c *Config) bool {
			cp := c.Routes[0].Compress
			return cp != nil && len(cp.Algorithms) == 3 && cp.MinSize == 1024 && len(cp.Types) == len(DefaultCompressTypes)
		}},
		{desc: "compress", base: baseRoute, line: "to u; compress { algorithms gzip br; types text/html Application/JSON; min_size 4KiB }", check: func(c *Config) bool {
			cp := c.Routes[0].Compress
			return cp.Algorithms[0] == "gzip" && len(cp.Algorithms) == 2 && cp.Types[1] == "application/json" && cp.MinSize == 4096
		}},
		{desc: "compress bad algorithm", base: baseRoute, line: "to u; compress { algorithms deflate }", err: `5:31: unknown compression algorithm "deflate"`},
		{desc: "compress bad type", base: baseRoute, line: "to u; compress { types html }", err: `5:26: types: invalid media type "html"`},
		{desc: "forward_auth", base: baseRoute, line: "to u; forward_auth http://auth.internal:9091/check { copy_headers x-user; cache 30s; timeout 1s }", check: func(c *Config) bool {
			a := c.Routes[0].ForwardAuth
			return a != nil && a.URL == "http://auth.internal:9091/check" && a.CopyHeaders[0] == "X-User" && a.Cache == 30*time.Second && a.Timeout == time.Second
		}},
		{desc: "forward_auth bad URL", base: baseRoute, line: "to u; forward_auth ftp://a/b {}", err: `5:22: forward_auth: invalid URL "ftp://a/b"`},
		// tcp route
		{desc: "tcp route", base: baseTop, line: "tcp route db { match HostSNI(`db.example.com`); to u; listeners web; priority 9 }", check: func(c *Config) bool {
			r := c.TCPRoutes[0]
			return r.Name == "db" && r.Upstream == "u" && r.Priority == 9 && r.Listeners[0] == "web" && r.Rule != nil
		}},
		{desc: "tcp route default priority", base: baseTop, line: "tcp route db { match HostSNI(`db.example.com`); to u }", check: func(c *Config) bool { return c.TCPRoutes[0].Priority == len("HostSNI(`db.example.com`)") }},
		{desc: "tcp route http matcher", base: baseTop, line: "tcp route db { match Host(`db`); to u }", err: `4:22: invalid match rule: `},
		{desc: "tcp route without to", base: baseTop, line: "tcp route db { match HostSNI(`db`) }", err: `4:1: tcp route "db" has no ` + "`to UPSTREAM`"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(tt.base, "%s", tt.line, 1)
			cfg, err := loadString(t, src)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("unexpected error:\n%v", err)
				}
				if !tt.check(cfg) {
					t.Errorf("check failed on %q: %+v", tt.line, cfg)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.err)
			}
			got := diagnostics(t, err)
			if !strings.HasPrefix(got[0], "main.conf:"+tt.err) {
				t.Errorf("first error = %q, want prefix %q (all: %q)", got[0], "main.conf:"+tt.err, got)
			}
		})
	}
}

// mw checks the first route's last middleware.
func mw(kind MiddlewareKind, name, arg string, code int) func(*Config) bool {
	return func(c *Config) bool {
		ms := c.Routes[0].Middlewares
		if len(ms) == 0 {
			return false
		}
		m := ms[len(ms)-1]
		return m.Kind == kind && m.Name == name && m.Arg == arg && m.Code == code
	}
}
