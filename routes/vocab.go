package routes

import "strings"

// BlockKind names a place where directives appear: the top level of a file
// or the inside of a block.
type BlockKind string

// The places directives appear.
const (
	MainBlock        BlockKind = "main file"
	RouteFileBlock   BlockKind = "route file"
	ListenBlock      BlockKind = "listen block"
	BuffersBlock     BlockKind = "buffers block"
	AdminBlock       BlockKind = "admin block"
	LogBlock         BlockKind = "log block"
	TracingBlock     BlockKind = "tracing block"
	ClusterBlock     BlockKind = "cluster block"
	ClusterTLSBlock  BlockKind = "cluster tls block"
	RuntimeBlock     BlockKind = "runtime block"
	UpstreamBlock    BlockKind = "upstream block"
	RouteBlock       BlockKind = "route block"
	TCPRouteBlock    BlockKind = "tcp route block"
	HealthBlock      BlockKind = "health block"
	OutlierBlock     BlockKind = "outlier block"
	RetryBlock       BlockKind = "retries block"
	BreakerBlock     BlockKind = "breaker block"
	TLSBlock         BlockKind = "tls block"
	ListenTLSBlock   BlockKind = "listen tls block"
	H2Block          BlockKind = "h2 block"
	QUICBlock        BlockKind = "quic block"
	ACMEBlock        BlockKind = "acme block"
	CORSBlock        BlockKind = "cors block"
	LimitBlock       BlockKind = "limit block"
	CompressBlock    BlockKind = "compress block"
	ForwardAuthBlock BlockKind = "forward_auth block"
	JWTBlock         BlockKind = "jwt block"
	UpstreamTLSBlock BlockKind = "upstream tls block"
	RollbackBlock    BlockKind = "rollback block"
)

// Spec describes one directive: its arguments and where it may appear.
type Spec struct {
	Name  string
	Usage string // the arguments, for messages: "ADDR [weight N]"
	// Min and Max bound the number of arguments; Max < 0 means any number.
	Min, Max int
	// Block is the kind of block the directive opens; "" when it has none.
	Block BlockKind
	// MainOnly directives are refused in route files.
	MainOnly bool
	// Repeat allows the directive more than once in one block.
	Repeat bool
	// take returns how many of args belong to this directive when several
	// directives share a line; nil means up to Max.
	take func(args []Arg) int
}

// vocabulary is the language: for every place, the directives allowed
// there, in the order error messages list them.
var vocabulary = map[BlockKind][]Spec{
	MainBlock: {
		{Name: "listen", Usage: "NAME", Min: 1, Max: 1, Block: ListenBlock, MainOnly: true, Repeat: true},
		{Name: "admin", Block: AdminBlock, MainOnly: true},
		{Name: "log", Block: LogBlock, MainOnly: true},
		{Name: "tracing", Block: TracingBlock, MainOnly: true},
		{Name: "cluster", Block: ClusterBlock, MainOnly: true},
		{Name: "runtime", Block: RuntimeBlock, MainOnly: true},
		{Name: "buffers", Block: BuffersBlock, MainOnly: true},
		{Name: "tls", Block: TLSBlock, MainOnly: true},
		{Name: "shutdown_grace", Usage: "DURATION", Min: 1, Max: 1, MainOnly: true},
		{Name: "tunnel_drain", Usage: "DURATION|off", Min: 1, Max: 1, MainOnly: true},
		{Name: "shutdown_delay", Usage: "DURATION", Min: 1, Max: 1, MainOnly: true},
		{Name: "include", Usage: "GLOB", Min: 1, Max: 1, MainOnly: true, Repeat: true},
		{Name: "upstream", Usage: "NAME", Min: 1, Max: 1, Block: UpstreamBlock, Repeat: true},
		{Name: "route", Usage: "NAME", Min: 1, Max: 1, Block: RouteBlock, Repeat: true},
		{Name: "tcp route", Usage: "NAME", Min: 1, Max: 1, Block: TCPRouteBlock, Repeat: true},
		{Name: "limit", Usage: "NAME", Min: 1, Max: 1, Block: LimitBlock, Repeat: true},
		{Name: "jwt", Usage: "NAME", Min: 1, Max: 1, Block: JWTBlock, Repeat: true},
	},
	ClusterBlock: {
		{Name: "etcd", Usage: "URL...", Min: 1, Max: -1},
		{Name: "prefix", Usage: "PREFIX", Min: 1, Max: 1},
		{Name: "name", Usage: "NAME", Min: 1, Max: 1},
		{Name: "tls", Block: ClusterTLSBlock},
		{Name: "key_file", Usage: "FILE", Min: 1, Max: 1},
		{Name: "lease_ttl", Usage: "DURATION", Min: 1, Max: 1},
	},
	ClusterTLSBlock: {
		{Name: "ca", Usage: "FILE", Min: 1, Max: 1},
		{Name: "cert", Usage: "FILE", Min: 1, Max: 1},
		{Name: "key", Usage: "FILE", Min: 1, Max: 1},
	},
	JWTBlock: {
		{Name: "jwks", Usage: "FILE|URL", Min: 1, Max: 1},
		{Name: "jwks_refresh", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "jwks_ca", Usage: "FILE", Min: 1, Max: 1},
		{Name: "issuer", Usage: "ISS", Min: 1, Max: 1},
		{Name: "audience", Usage: "AUD", Min: 1, Max: 1},
		{Name: "claim_header", Usage: "CLAIM HEADER", Min: 2, Max: 2, Repeat: true},
		{Name: "leeway", Usage: "DURATION", Min: 1, Max: 1},
	},
	ForwardAuthBlock: {
		{Name: "timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "copy_headers", Usage: "NAME...", Min: 1, Max: -1, Repeat: true},
		{Name: "cache", Usage: "DURATION|off", Min: 1, Max: 1},
	},
	CompressBlock: {
		{Name: "algorithms", Usage: "zstd|br|gzip...", Min: 1, Max: 3},
		{Name: "types", Usage: "MEDIA_TYPE...", Min: 1, Max: -1, Repeat: true},
		{Name: "min_size", Usage: "SIZE", Min: 1, Max: 1},
	},
	LimitBlock: {
		{Name: "rate", Usage: "N/s|N/m|N/h", Min: 1, Max: 1},
		{Name: "burst", Usage: "N", Min: 1, Max: 1},
		{Name: "key", Usage: "client_ip|route|header NAME|cookie NAME", Min: 1, Max: 2},
		{Name: "max_keys", Usage: "N", Min: 1, Max: 1},
		{Name: "max_in_flight", Usage: "N", Min: 1, Max: 1},
	},
	ListenBlock: {
		{Name: "addr", Usage: "ADDR", Min: 1, Max: 1},
		{Name: "protocols", Usage: "PROTOCOL...", Min: 1, Max: -1},
		{Name: "read_header_timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "write_timeout", Usage: "DURATION|off", Min: 1, Max: 1},
		{Name: "idle_timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "max_header_bytes", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "max_body_bytes", Usage: "SIZE|unlimited", Min: 1, Max: 1},
		{Name: "body_timeout", Usage: "DURATION|off", Min: 1, Max: 1},
		{Name: "body_min_rate", Usage: "SIZE/s [DURATION]|off", Min: 1, Max: 2},
		{Name: "max_conns", Usage: "N", Min: 1, Max: 1},
		{Name: "backlog", Usage: "N", Min: 1, Max: 1},
		{Name: "reuseport", Usage: "on|off", Min: 1, Max: 1},
		{Name: "nodelay", Usage: "on|off", Min: 1, Max: 1},
		{Name: "accept_loops", Usage: "N", Min: 1, Max: 1},
		{Name: "defer_accept", Usage: "DURATION|off", Min: 1, Max: 1},
		{Name: "tcp_fastopen", Usage: "N|off", Min: 1, Max: 1},
		{Name: "keepalive", Usage: "on|off", Min: 1, Max: 1},
		{Name: "keepalive_idle", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "keepalive_interval", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "keepalive_count", Usage: "N", Min: 1, Max: 1},
		{Name: "rcvbuf", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "sndbuf", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "trusted_proxies", Usage: "CIDR...", Min: 1, Max: -1, Repeat: true},
		{Name: "allow", Usage: "ADDR|CIDR|file PATH...", Min: 1, Max: -1, Repeat: true},
		{Name: "deny", Usage: "ADDR|CIDR|file PATH...", Min: 1, Max: -1, Repeat: true},
		{Name: "error_page", Usage: "CODE... file PATH|BODY", Min: 2, Max: -1, Repeat: true},
		{Name: "not_found_body", Usage: "TEXT", Min: 1, Max: 1},
		{Name: "normalize", Usage: "on|off", Min: 1, Max: 1},
		{Name: "h2_server", Usage: "own|xnet", Min: 1, Max: 1},
		{Name: "tls", Block: ListenTLSBlock},
		{Name: "proxy_protocol", Usage: "trusted CIDR...", Min: 2, Max: -1},
		{Name: "redirect_https", Usage: "[PORT]", Min: 0, Max: 1},
		{Name: "h2", Block: H2Block},
		{Name: "quic", Block: QUICBlock},
	},
	TLSBlock: {
		{Name: "cert", Usage: "CERTFILE KEYFILE [default]", Min: 2, Max: 3, Repeat: true, take: takeCert},
		{Name: "self_signed", Usage: "NAME...", Min: 1, Max: -1, Repeat: true},
		{Name: "ocsp_stapling", Usage: "on|off", Min: 1, Max: 1},
		{Name: "session_tickets", Usage: "on|off", Min: 1, Max: 1},
		{Name: "ticket_rotation", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "acme", Block: ACMEBlock},
	},
	ACMEBlock: {
		{Name: "directory", Usage: "URL|letsencrypt|letsencrypt-staging", Min: 1, Max: 1},
		{Name: "email", Usage: "ADDR", Min: 1, Max: 1},
		{Name: "accept_terms", Usage: "on|off", Min: 1, Max: 1},
		{Name: "ca_root", Usage: "FILE", Min: 1, Max: 1},
		{Name: "storage", Usage: "DIR", Min: 1, Max: 1},
		{Name: "names", Usage: "NAME...", Min: 1, Max: -1, Repeat: true},
		{Name: "challenges", Usage: "http-01|tls-alpn-01...", Min: 1, Max: 2},
		{Name: "key_type", Usage: "ecdsa|rsa", Min: 1, Max: 1},
		{Name: "renew_before", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "eab", Usage: "KEYID HMAC", Min: 2, Max: 2},
	},
	ListenTLSBlock: {
		{Name: "min_version", Usage: "1.2|1.3", Min: 1, Max: 1},
		{Name: "ciphers", Usage: "NAME...", Min: 1, Max: -1},
		{Name: "curves", Usage: "NAME...", Min: 1, Max: -1},
		{Name: "client_ca", Usage: "FILE", Min: 1, Max: 1},
		{Name: "client_auth", Usage: "require|optional", Min: 1, Max: 1},
		{Name: "handshake_timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "cert", Usage: "CERTFILE KEYFILE [default]", Min: 2, Max: 3, Repeat: true, take: takeCert},
		{Name: "self_signed", Usage: "NAME...", Min: 1, Max: -1, Repeat: true},
	},
	H2Block: {
		{Name: "max_concurrent_streams", Usage: "N", Min: 1, Max: 1},
		{Name: "max_frame_size", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "stream_stall_timeout", Usage: "DURATION", Min: 1, Max: 1},
	},
	QUICBlock: {
		{Name: "idle_timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "max_incoming_streams", Usage: "N", Min: 1, Max: 1},
		{Name: "stream_window", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "connection_window", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "allow_0rtt", Usage: "on|off", Min: 1, Max: 1},
		{Name: "udp_rcvbuf", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "udp_sndbuf", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "alt_svc_max_age", Usage: "DURATION|off", Min: 1, Max: 1},
		{Name: "max_conns_per_source", Usage: "N|off", Min: 1, Max: 1},
	},
	AdminBlock: {
		{Name: "listen", Usage: "ADDR", Min: 1, Max: 1},
		{Name: "token_file", Usage: "PATH [create]", Min: 1, Max: 2},
		{Name: "state_dir", Usage: "PATH", Min: 1, Max: 1},
	},
	LogBlock: {
		{Name: "access", Usage: "on|off", Min: 1, Max: 1},
		{Name: "format", Usage: "json|text", Min: 1, Max: 1},
		{Name: "output", Usage: "stdout|stderr|PATH", Min: 1, Max: 1},
		{Name: "access_output", Usage: "stdout|stderr|PATH", Min: 1, Max: 1},
		{Name: "access_query", Usage: "keep|redact|drop", Min: 1, Max: 1},
		{Name: "level", Usage: "debug|info|warn|error", Min: 1, Max: 1},
		{Name: "sample", Usage: "PERCENT", Min: 1, Max: 1},
		{Name: "slower_than", Usage: "DURATION", Min: 1, Max: 1},
	},
	TracingBlock: {
		{Name: "otlp", Usage: "URL", Min: 1, Max: 1},
		{Name: "sample", Usage: "PERCENT", Min: 1, Max: 1},
		{Name: "service_name", Usage: "NAME", Min: 1, Max: 1},
	},
	RuntimeBlock: {
		{Name: "gomaxprocs", Usage: "N|auto", Min: 1, Max: 1},
		{Name: "gomemlimit", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "gc_percent", Usage: "N|off", Min: 1, Max: 1},
	},
	BuffersBlock: {
		{Name: "memory", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "disk", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "request_memory", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "response_memory", Usage: "SIZE", Min: 1, Max: 1},
		{Name: "response_max", Usage: "SIZE|off", Min: 1, Max: 1},
		{Name: "dir", Usage: "PATH", Min: 1, Max: 1},
	},
	UpstreamBlock: {
		{Name: "server", Usage: "ADDR [weight N]", Min: 1, Max: 3, Repeat: true, take: takeServer},
		{Name: "connect_timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "response_timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "idle_timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "max_idle_conns", Usage: "N", Min: 1, Max: 1},
		{Name: "balance", Usage: "round_robin|least_request|random|hash KEY|sticky COOKIE", Min: 1, Max: 3, take: takeBalance},
		{Name: "health", Block: HealthBlock},
		{Name: "outlier", Block: OutlierBlock},
		{Name: "breaker", Block: BreakerBlock},
		{Name: "panic_threshold", Usage: "PERCENT|off", Min: 1, Max: 1},
		{Name: "slow_start", Usage: "DURATION|off", Min: 1, Max: 1},
		{Name: "retries", Block: RetryBlock},
		{Name: "max_requests", Usage: "N", Min: 1, Max: 1},
		{Name: "max_connections", Usage: "N", Min: 1, Max: 1},
		{Name: "max_pending", Usage: "N", Min: 1, Max: 1},
		{Name: "send_proxy", Usage: "v1|v2", Min: 1, Max: 1},
		{Name: "protocol", Usage: "http1|h2|h2c", Min: 1, Max: 1},
		{Name: "fallback", Usage: "http1", Min: 1, Max: 1},
		{Name: "tls", Block: UpstreamTLSBlock},
	},
	UpstreamTLSBlock: {
		{Name: "ca", Usage: "FILE|system", Min: 1, Max: 1},
		{Name: "server_name", Usage: "NAME", Min: 1, Max: 1},
		{Name: "client_cert", Usage: "CERTFILE KEYFILE", Min: 2, Max: 2},
		{Name: "min_version", Usage: "1.2|1.3", Min: 1, Max: 1},
		{Name: "verify", Usage: "on|off", Min: 1, Max: 1},
	},
	RetryBlock: {
		{Name: "attempts", Usage: "N", Min: 1, Max: 1},
		{Name: "on", Usage: "connect_failure|reset|502|503|504...", Min: 1, Max: -1},
		{Name: "budget", Usage: "PERCENT", Min: 1, Max: 1},
		{Name: "min_concurrent", Usage: "N", Min: 1, Max: 1},
		{Name: "body_buffer", Usage: "SIZE", Min: 1, Max: 1},
	},
	HealthBlock: {
		{Name: "type", Usage: "http|tcp", Min: 1, Max: 1},
		{Name: "path", Usage: "PATH", Min: 1, Max: 1},
		{Name: "method", Usage: "METHOD", Min: 1, Max: 1},
		{Name: "host", Usage: "HOST", Min: 1, Max: 1},
		{Name: "expect", Usage: "STATUS|LO-HI...", Min: 1, Max: -1},
		{Name: "body", Usage: "TEXT", Min: 1, Max: 1},
		{Name: "interval", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "jitter", Usage: "PERCENT", Min: 1, Max: 1},
		{Name: "timeout", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "healthy", Usage: "N", Min: 1, Max: 1},
		{Name: "unhealthy", Usage: "N", Min: 1, Max: 1},
		{Name: "initial", Usage: "healthy|unhealthy", Min: 1, Max: 1},
	},
	OutlierBlock: {
		{Name: "consecutive_5xx", Usage: "N|off", Min: 1, Max: 1},
		{Name: "consecutive_connect_failures", Usage: "N|off", Min: 1, Max: 1},
		{Name: "base_ejection", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "max_ejection", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "max_ejection_percent", Usage: "PERCENT", Min: 1, Max: 1},
	},
	BreakerBlock: {
		{Name: "error_rate", Usage: "PERCENT", Min: 1, Max: 1},
		{Name: "min_requests", Usage: "N", Min: 1, Max: 1},
		{Name: "window", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "cool_down", Usage: "DURATION", Min: 1, Max: 1},
		{Name: "trials", Usage: "N", Min: 1, Max: 1},
	},
	RouteBlock: append(routeCommon(),
		Spec{Name: "strip_prefix", Usage: "PREFIX", Min: 1, Max: 1, Repeat: true},
		Spec{Name: "add_prefix", Usage: "PREFIX", Min: 1, Max: 1, Repeat: true},
		Spec{Name: "set_header", Usage: "NAME VALUE", Min: 2, Max: 2, Repeat: true},
		Spec{Name: "remove_header", Usage: "NAME", Min: 1, Max: 1, Repeat: true},
		Spec{Name: "set_response_header", Usage: "NAME VALUE", Min: 2, Max: 2, Repeat: true},
		Spec{Name: "remove_response_header", Usage: "NAME", Min: 1, Max: 1, Repeat: true},
		Spec{Name: "redirect", Usage: "CODE TARGET", Min: 2, Max: 2},
		Spec{Name: "respond", Usage: "CODE [BODY]", Min: 1, Max: 2},
		Spec{Name: "redirect_https", Usage: "[CODE] [PORT]", Min: 0, Max: 2},
		Spec{Name: "acme", Usage: "on|off", Min: 1, Max: 1},
		Spec{Name: "allow", Usage: "ADDR|CIDR|file PATH...", Min: 1, Max: -1, Repeat: true},
		Spec{Name: "deny", Usage: "ADDR|CIDR|file PATH...", Min: 1, Max: -1, Repeat: true},
		Spec{Name: "cors", Block: CORSBlock},
		Spec{Name: "limit", Usage: "NAME", Min: 1, Max: 1, Repeat: true},
		Spec{Name: "basic_auth", Usage: "HTPASSWD [REALM]", Min: 1, Max: 2},
		Spec{Name: "compress", Block: CompressBlock},
		Spec{Name: "forward_auth", Usage: "URL", Min: 1, Max: 1, Block: ForwardAuthBlock},
		Spec{Name: "jwt", Block: JWTBlock},
		Spec{Name: "jwt_policy", Usage: "NAME", Min: 1, Max: 1},
		Spec{Name: "error_page", Usage: "CODE... file PATH|BODY", Min: 2, Max: -1, Repeat: true},
		Spec{Name: "request_buffering", Usage: "on|off", Min: 1, Max: 1},
		Spec{Name: "response_buffering", Usage: "on|off", Min: 1, Max: 1},
		Spec{Name: "response_timeout", Usage: "DURATION", Min: 1, Max: 1},
		Spec{Name: "sticky", Usage: "cookie NAME|header NAME", Min: 2, Max: 2},
		Spec{Name: "connect_timeout", Usage: "DURATION", Min: 1, Max: 1},
		Spec{Name: "idle_timeout", Usage: "DURATION", Min: 1, Max: 1},
		Spec{Name: "max_body_bytes", Usage: "SIZE|unlimited", Min: 1, Max: 1},
		Spec{Name: "retries", Block: RetryBlock},
		Spec{Name: "mirror", Usage: "UPSTREAM [PERCENT]", Min: 1, Max: 2, Repeat: true},
		Spec{Name: "rollback", Block: RollbackBlock},
	),
	RollbackBlock: {
		{Name: "error_rate", Usage: "PERCENT [over DURATION]", Min: 1, Max: 3},
		{Name: "min_requests", Usage: "N", Min: 1, Max: 1},
	},
	CORSBlock: {
		{Name: "origins", Usage: "ORIGIN...|*", Min: 1, Max: -1, Repeat: true},
		{Name: "methods", Usage: "METHOD...", Min: 1, Max: -1, Repeat: true},
		{Name: "headers", Usage: "NAME...", Min: 1, Max: -1, Repeat: true},
		{Name: "expose_headers", Usage: "NAME...", Min: 1, Max: -1, Repeat: true},
		{Name: "credentials", Usage: "on|off", Min: 1, Max: 1},
		{Name: "max_age", Usage: "DURATION", Min: 1, Max: 1},
	},
	TCPRouteBlock: append(routeCommon(), Spec{Name: "tls", Usage: "passthrough|terminate", Min: 1, Max: 1}),
}

func init() {
	// A route file holds what a main file holds, less the main-only part.
	for _, s := range vocabulary[MainBlock] {
		if !s.MainOnly {
			vocabulary[RouteFileBlock] = append(vocabulary[RouteFileBlock], s)
		}
	}
	// These takes look names up in the vocabulary, so they are set here:
	// in its initialiser they would make an initialisation cycle.
	setTake(ListenBlock, "protocols", takeProtocols)
	setTake(ListenBlock, "redirect_https", takeOptional(ListenBlock, 1))
	setTake(RouteBlock, "redirect_https", takeOptional(RouteBlock, 2))
	splitTo()
}

// splitTo lets a route's `to` name several pools with their shares of
// the traffic (`to api-v1 90%, api-v2 10%`); a tcp route's stays one
// pool.
func splitTo() {
	for i := range vocabulary[RouteBlock] {
		if s := &vocabulary[RouteBlock][i]; s.Name == "to" {
			s.Usage, s.Max, s.take = "UPSTREAM [SHARE%[,] UPSTREAM SHARE%...]", -1, takeTo
		}
	}
}

// takeTo: `to POOL`, or pairs of a pool and its share (`90%` or `90%,`;
// a lone "," between pairs is taken too).
func takeTo(args []Arg) int {
	n := 0
	for n+1 < len(args) && args[n].Kind == Word && IsShare(args[n+1].Value) {
		n += 2
		if n < len(args) && args[n].Kind == Word && args[n].Value == "," {
			n++
		}
	}
	return max(n, 1)
}

// IsShare reports whether w is written as a share of a split: digits,
// an optional fraction, "%", and an optional trailing ",".
func IsShare(w string) bool {
	w = strings.TrimSuffix(w, ",")
	num, ok := strings.CutSuffix(w, "%")
	if !ok || num == "" {
		return false
	}
	for i := 0; i < len(num); i++ {
		if c := num[i]; (c < '0' || c > '9') && c != '.' {
			return false
		}
	}
	return true
}

func setTake(kind BlockKind, name string, take func([]Arg) int) {
	for i := range vocabulary[kind] {
		if vocabulary[kind][i].Name == name {
			vocabulary[kind][i].take = take
		}
	}
}

// takeProtocols: `protocols NAME...` ends at a directive of the listen
// block, except that "tls" and "h2" are protocols there, not the blocks
// of the same names.
func takeProtocols(args []Arg) int {
	for i := 1; i < len(args); i++ {
		if v := args[i].Value; v != "tls" && v != "h2" && isDirective(ListenBlock, args[i]) {
			return i
		}
	}
	return len(args)
}

// takeOptional: up to max optional arguments, ending at the first word
// that names a directive of the block (`redirect_https to u`).
func takeOptional(kind BlockKind, max int) func([]Arg) int {
	return func(args []Arg) int {
		n := min(max, len(args))
		for i := 0; i < n; i++ {
			if isDirective(kind, args[i]) {
				return i
			}
		}
		return n
	}
}

// takeCert: `cert CERTFILE KEYFILE` or `cert CERTFILE KEYFILE default`.
func takeCert(args []Arg) int {
	if len(args) >= 3 && args[2].Kind == Word && args[2].Value == "default" {
		return 3
	}
	return 2
}

func routeCommon() []Spec {
	return []Spec{
		{Name: "match", Usage: "EXPR", Min: 1, Max: 1},
		{Name: "to", Usage: "UPSTREAM", Min: 1, Max: 1},
		{Name: "priority", Usage: "N", Min: 1, Max: 1},
		{Name: "listeners", Usage: "NAME...", Min: 1, Max: -1},
	}
}

// takeServer: `server ADDR` or `server ADDR weight N`.
func takeServer(args []Arg) int {
	if len(args) >= 2 && args[1].Kind == Word && args[1].Value == "weight" {
		return 3
	}
	return 1
}

// takeBalance: `balance POLICY`, `balance sticky COOKIE`, `balance hash
// client_ip|path` or `balance hash header|cookie NAME`.
func takeBalance(args []Arg) int {
	if len(args) < 2 || args[0].Kind != Word {
		return 1
	}
	switch args[0].Value {
	case "sticky":
		return 2
	case "hash":
		if args[1].Value == "header" || args[1].Value == "cookie" {
			return 3
		}
		return 2
	}
	return 1
}

// Vocabulary returns the directives allowed in a place, in table order.
func Vocabulary(kind BlockKind) []Spec {
	return append([]Spec(nil), vocabulary[kind]...)
}

// BlockKinds lists every place, for tests that walk the whole vocabulary.
func BlockKinds() []BlockKind {
	return []BlockKind{MainBlock, RouteFileBlock, ListenBlock, AdminBlock, LogBlock, TracingBlock, RuntimeBlock, UpstreamBlock, RouteBlock, TCPRouteBlock,
		HealthBlock, OutlierBlock, BreakerBlock, RetryBlock, TLSBlock, ListenTLSBlock, H2Block, ACMEBlock, CORSBlock, LimitBlock, CompressBlock, ForwardAuthBlock, JWTBlock, RollbackBlock}
}

func lookup(kind BlockKind, name string) (Spec, bool) {
	for _, s := range vocabulary[kind] {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// mainOnly reports whether name is a main-file directive.
func mainOnly(name string) bool {
	s, ok := lookup(MainBlock, name)
	return ok && s.MainOnly
}
