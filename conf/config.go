// Package conf reads edgeway's main file and the route files it includes and
// turns them into one typed, validated Config. Parsing is the routes
// package's job (grammar and positions); conf fills in defaults on the parsed
// values, checks them as a whole and reports every error it finds, each with
// file:line:col, so that a bad file is refused before anything changes.
package conf

import (
	"net/netip"
	"slices"
	"time"

	"github.com/edgeway/edgeway/routes/rule"
)

// Config is one complete, validated configuration. The zero values of its
// fields are never seen by users of a Config returned by Load: defaults are
// filled in before validation.
type Config struct {
	// MainFile is the absolute path of the main file; Files lists it and
	// every route file it included, in load order (for reload and watching).
	MainFile string
	Files    []string
	// FileSHA256 holds the hex SHA-256 of each file in Files, of the bytes
	// that were parsed (for the admin API and the config hash metric).
	FileSHA256 []string

	Listeners []Listener
	Admin     *Admin // nil when the main file has no admin block
	// TLS is the top-level tls block (certificates); nil when there is
	// none. Load refuses a TLS listener without one.
	TLS     *TLSStore
	Log     Log
	Tracing *Tracing // nil without a tracing block: tracing off
	Cluster *Cluster // nil without a cluster block: state stays local
	Runtime Runtime
	// Buffers bounds the memory and disk that request bodies held before
	// forwarding use (the `buffers { ... }` block; request buffering).
	Buffers Buffers
	// ShutdownDelay is how long edgeway keeps serving after SIGTERM with
	// /readyz already answering 503, so that a load balancer in front
	// stops sending before the listeners close; set it to the balancer's
	// health-check interval times its unhealthy threshold. A second
	// SIGTERM or SIGINT cuts it short. Default 0 (no delay).
	ShutdownDelay time.Duration
	// TunnelDrain is how long a tunnel (a WebSocket, an accepted upgrade)
	// whose route or upstream server left the configuration may go on
	// after the reload that removed it; tunnels whose route and server
	// stay are never touched by a reload (`tunnel_drain`). Default 0 (or
	// `off`): no limit, they end when their peers close them.
	TunnelDrain time.Duration
	// ShutdownGrace is how long in-flight requests may run after the
	// listeners stop accepting (after ShutdownDelay) before connections
	// are closed. Default 10s.
	ShutdownGrace time.Duration

	Upstreams []Upstream // in definition order; names are unique
	// Limits are the `limit NAME { ... }` blocks routes refer to.
	Limits []Limit
	// JWTs are the named `jwt NAME { ... }` policies that routes
	// (`jwt_policy NAME`) and JWTClaim matchers refer to.
	JWTs      []JWT
	Routes    []Route    // HTTP routes, in definition order (file order after include expansion)
	TCPRoutes []TCPRoute // parsed and validated; served by a later issue

	// Warnings are problems that do not refuse the file (a rule that can
	// never match, ...). `edgeway validate` prints them.
	Warnings []Diagnostic
	// Paths lists every file and folder the configuration names, resolved
	// (ConfigPath), with the directive that names it.
	Paths []PathRef
}

// Listener is one `listen NAME { ... }` block.
type Listener struct {
	Name string
	Addr string // host:port as written; ":8080" listens on every address
	// Protocols the listener speaks: "http1", "h2c" (cleartext HTTP/2 with
	// prior knowledge), "tls" (the listener terminates TLS, or passes it
	// through for `tcp route`s), "h2" (HTTP/2 over TLS, by ALPN; needs
	// tls), "h3" (HTTP/3 over QUIC on the same port number over UDP;
	// needs tls). On a TLS listener "http1" and "h2" are the protocols offered
	// by ALPN, and h2c is refused; when neither is written Load appends
	// "h2" and "http1". Otherwise in the order written. Default: http1
	// and h2c.
	Protocols []string
	// TLS holds the listener's TLS settings; non-nil exactly when
	// Protocols has "tls".
	TLS *ListenerTLS
	// ProxyProtocol, when non-nil, requires a PROXY protocol header from
	// its trusted peers and refuses every other peer.
	ProxyProtocol *ProxyProtocol
	// RedirectHTTPS, when non-zero, answers every request on this
	// listener with a 308 redirect to https on this port
	// (`redirect_https [PORT]`, default port 443; port 443 is left out of
	// the URL); router.RedirectHTTPS is the handler. Routes are not
	// consulted. Default 0: off; never set on a TLS listener.
	RedirectHTTPS int
	// H2 holds the HTTP/2 limits (for h2 and h2c), defaults filled in
	// (DefaultH2Limits) whether or not the listener has an h2 block.
	H2 H2Limits
	// QUIC holds the HTTP/3 settings (for h3), defaults filled in
	// (DefaultQUIC) whether or not the listener has a quic block.
	QUIC QUIC
	// ReadHeaderTimeout bounds the time to read a request's headers; a
	// client slower than this is disconnected. Default 10s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request in flight
	// after this long. Default 60s.
	IdleTimeout time.Duration
	// WriteTimeout cuts off a client that takes none of a response's
	// bytes for this long (`write_timeout`; nginx's send_timeout). Default
	// 60s; 0 (written `off`) means no limit.
	WriteTimeout time.Duration
	// MaxHeaderBytes caps the request line plus headers; larger requests get
	// 431 (Go's HTTP/1 reader allows up to 4 KiB of slack beyond it).
	// Default 32KiB; at most 1MiB.
	MaxHeaderBytes int
	// MaxBodyBytes caps a request body. A request whose Content-Length is
	// larger gets 413 before anything is forwarded; a chunked body that
	// grows past it is cut off (413 when no response has started). -1
	// (written `unlimited`) means no limit. Default 100MiB; the zero value,
	// in a Listener not made by Load or DefaultListener, also means 100MiB.
	MaxBodyBytes int64
	// BodyTimeout bounds a request body's silence while edgeway buffers
	// it (routes with request buffering on): a client that sends no body
	// byte for this long is answered 408 and its connection closed, and
	// nothing reaches a server. The head's read_header_timeout does not
	// cover the body; a streamed body is bounded by the upstream's
	// idle_timeout instead. -1 (written `off`) means no limit. Default
	// 10s; the zero value, in a Listener not made by Load or
	// DefaultListener, also means 10s.
	BodyTimeout time.Duration
	// BodyMinRate is the least rate at which a client must send a body
	// edgeway buffers (`body_min_rate SIZE/s [WINDOW]`): measured over
	// each Window of the upload (default 10s, at least 1s), a body that
	// brought fewer than Bytes per second over a window is answered 408
	// and its connection closed, and nothing reaches a server. It catches
	// the trickle that body_timeout's silence cannot (a few bytes every
	// few seconds). Default 500 bytes/s over 10s (the zero value; see
	// MinRate.Effective); `off` is a negative Bytes.
	BodyMinRate MinRate
	// MaxConns caps concurrent client connections; further ones wait in the
	// kernel backlog. 0 means no limit. Default 0.
	MaxConns int
	// Backlog is the listen(2) backlog. 0 uses the system default
	// (net.core.somaxconn).
	Backlog int
	// ReusePort sets SO_REUSEPORT. Default false.
	ReusePort bool
	// NoDelay sets TCP_NODELAY on accepted connections. Default true.
	NoDelay bool
	// AcceptLoops is the number of listening sockets, one accept
	// goroutine each, when ReusePort is on (the kernel spreads new
	// connections over them). 0 means one per GOMAXPROCS. Default 0; at
	// most 256; more than 1 needs `reuseport on`.
	AcceptLoops int
	// DeferAccept sets TCP_DEFER_ACCEPT, in whole seconds: the kernel hands a connection over only when its first bytes arrive,
	// or after about this long, so clients that connect and send nothing
	// (port probes, some health checks) wake nothing. Clients speak first
	// in HTTP, TLS and the PROXY protocol, so nothing waits on it. 0
	// (written `off`) turns it off. Default 1s; at most 1m.
	DeferAccept time.Duration
	// FastOpen is the TCP_FASTOPEN queue length: the number of pending
	// connections whose SYN may carry data (the kernel must allow it:
	// net.ipv4.tcp_fastopen bit 2). SYN data can be replayed, so it is off
	// by default. 0 (written `off`) turns it off. Default 0; at most 65535.
	FastOpen int
	// KeepAlive turns TCP keepalive probes on for client connections, so
	// that peers gone behind a NAT or firewall are found and closed.
	// Default true.
	KeepAlive bool
	// KeepAliveIdle is the silence before the first probe (TCP_KEEPIDLE).
	// Default 60s; 0 leaves the system default
	// (net.ipv4.tcp_keepalive_time); whole seconds, at most 32767s.
	KeepAliveIdle time.Duration
	// KeepAliveInterval is the time between probes (TCP_KEEPINTVL).
	// Default 15s; 0 leaves the system default; whole seconds, at most
	// 32767s.
	KeepAliveInterval time.Duration
	// KeepAliveCount is the number of unanswered probes before the
	// connection is dropped (TCP_KEEPCNT). Default 4; 0 leaves the system
	// default; at most 127.
	KeepAliveCount int
	// RecvBuffer and SendBuffer set SO_RCVBUF and SO_SNDBUF on the
	// listening socket, which accepted connections inherit. Smaller
	// buffers let many idle connections cost less kernel memory; the
	// kernel doubles the value and caps it at net.core.rmem_max /
	// wmem_max. 0 keeps the kernel's autotuning. Default 0; at most 64MiB.
	RecvBuffer int
	SendBuffer int
	// TrustedProxies lists the peers whose X-Forwarded-* and Forwarded
	// headers are kept; from any other peer they are replaced. Default none.
	TrustedProxies []netip.Prefix
	// Allow and Deny are the listener's `allow` and `deny` lists (see
	// Access), checked on every request before routing.
	Allow, Deny []netip.Prefix
	// ErrorPages are the bodies of the answers edgeway makes itself on
	// this listener (a route's own come first).
	ErrorPages []ErrorPage
	// NotFoundBody is the body of the 404 sent when no route matches.
	// Default "404 page not found\n".
	NotFoundBody string
	// Normalize turns on entry-point path normalisation
	// (docs/rules.md §3.1 steps 1-4). Default true.
	Normalize bool
	// H2Server picks the HTTP/2 server of the listener's h2 and h2c
	// connections (`h2_server`): "own", edgeway's (listeners/h2conn), or
	// "xnet", golang.org/x/net/http2 behind listeners/h2guard. Default
	// "own".
	H2Server string
	Pos      Pos
}

// Admin is the `admin { ... }` block: the admin API, health, readiness and
// metrics endpoints, served by package admin on their own listener.
type Admin struct {
	// Listen is the admin API's address. Default 127.0.0.1:9900; an
	// address that is not loopback is allowed and logged as a warning.
	Listen string
	// TokenFile holds the bearer token every /api/ and /metrics call must
	// send. Required. The file must not be readable by group or others.
	TokenFile string
	// CreateToken (`token_file PATH create`) makes a missing token file
	// at start: a random token, mode 0600, its folder created 0700.
	CreateToken bool
	// StateDir is where runtime changes made through the admin API (the
	// upstream server overrides) are kept, so that they survive a restart.
	// Default "": they live in memory only and survive reloads, not
	// restarts.
	StateDir string
	Pos      Pos
}

// Log configures logging.
type Log struct {
	// Access turns the per-request access log on. Default true.
	Access bool
	// Format is "json" or "text". Default "text".
	Format string
	// Output is "stdout", "stderr" or a file path. Default "stderr". A
	// file is opened for appending and reopened on SIGUSR1 (logrotate).
	Output string
	// AccessOutput is where the access log goes: "stdout", "stderr" or a
	// file path, reopened on SIGUSR1 like Output. Default "" (with the
	// error log, in Output).
	AccessOutput string
	// Level is "debug", "info", "warn" or "error". Default "info".
	Level string
	// AccessQuery is what the access log writes of a request's query:
	// "keep" (as received), "redact" (each value replaced by "x", the
	// names kept: "token=x&page=x") or "drop" (nothing). Default ""
	// (the zero value), which keeps it.
	AccessQuery string
	// Sample is the share of successful requests (status below 400)
	// whose access-log line is written, 0 to 1 (`sample 10%`). Errors and
	// requests slower than SlowerThan are always written; refusals and
	// tunnel lines are never sampled. Default 1.
	Sample float64
	// SlowerThan: a request that took at least this long always gets its
	// line, whatever Sample says (`slower_than 1s`). Default 0: no such
	// rule.
	SlowerThan time.Duration
}

// Runtime is the `runtime { ... }` block: settings of the Go runtime,
// applied at start (cmd/edgeway applyRuntime). A zero field leaves its setting
// as the environment (GOMAXPROCS, GOMEMLIMIT, GOGC) or the runtime's
// default made it.
type Runtime struct {
	// GOMAXPROCS is the number of threads running Go code at once. 0
	// (written `auto`) keeps the runtime's default: since Go 1.25 it
	// follows the CPU count and the cgroup CPU quota (container limit),
	// and is updated when the quota changes. Default 0; at most 1024.
	GOMAXPROCS int
	// MemoryLimit is the soft memory limit (debug.SetMemoryLimit, as
	// GOMEMLIMIT): the collector works harder as the heap nears it.
	// Default 0 (no limit unless GOMEMLIMIT is set); at least 1MiB.
	MemoryLimit int64
	// GCPercent is the heap growth that triggers a collection
	// (debug.SetGCPercent, as GOGC). -1 (written `off`) turns the
	// collector off until MemoryLimit is reached, and needs it. Default 0
	// (GOGC or 100); otherwise at least 1.
	GCPercent int
}

// Buffers is the `buffers { ... }` block: the caps on what request bodies
// held before forwarding take, across all requests at once. A body is
// read into memory chunks up to RequestMemory, then into a temporary file
// in Dir (unlinked when opened: none survives a crash), up to the
// listener's max_body_bytes. Past Memory a body spills to disk; a body
// that would pass Disk is not held: it streams to the server as it
// arrives (what was read goes first), as with `request_buffering off`.
// A zero field means its default.
type Buffers struct {
	// Memory caps the memory all held bodies take together (`memory
	// SIZE`). Each body's first 4 KiB is granted past it. Default 32MiB.
	Memory int64
	// Disk caps the temporary files' bytes together (`disk SIZE`).
	// Default 8GiB; whatever it says, a spill never takes Dir's file
	// system under bodybuf.MinFreePercent (5%) free.
	Disk int64
	// RequestMemory is the memory one body may take before it goes on
	// in a file (`request_memory SIZE`). Default 1MiB; at most Memory.
	RequestMemory int64
	// ResponseMemory is the memory one response body may hold, not yet
	// taken by its client, before it goes on in a file (`response_memory
	// SIZE`). Default 1MiB; at most Memory.
	ResponseMemory int64
	// ResponseMax caps the bytes one response holds, memory and file,
	// not yet taken by its client (`response_max SIZE|off`); past it,
	// reading the server waits for the client: the rest streams. Default
	// 1GiB; NoResponseMax (`off`) buffers none (every response streams).
	ResponseMax int64
	// Dir is the folder of the temporary files (`dir PATH`), created at
	// start when missing. Default "": the system's ($TMPDIR or /tmp).
	Dir string
	Pos Pos
}

// Upstream is an `upstream NAME { ... }` block.
type Upstream struct {
	Name    string
	Servers []Server
	// ConnectTimeout bounds dialing one server; exceeded answers 504.
	// Default 5s.
	ConnectTimeout time.Duration
	// ResponseTimeout bounds the wait for response headers after the request
	// was written; exceeded answers 504. Default 60s.
	ResponseTimeout time.Duration
	// IdleTimeout bounds a silence while streaming a body in either
	// direction, and how long a pooled idle connection is kept. Default 90s.
	IdleTimeout time.Duration
	// MaxIdleConns caps idle keep-alive connections kept per server.
	// Default 256.
	MaxIdleConns int
	// Balance is the balancing policy (`balance`). Default round_robin.
	Balance Balance
	// Health configures active health checks (`health { ... }`); nil, the
	// default, checks nothing and counts every server healthy.
	Health *HealthCheck
	// Outlier configures passive outlier ejection (`outlier { ... }`);
	// nil, the default, never ejects.
	Outlier *Outlier
	// Breaker configures the per-server error-rate circuit breaker
	// (`breaker { ... }`); nil, the default, never opens.
	Breaker *Breaker
	// PanicThreshold is a percentage (`panic_threshold 50%`): when fewer
	// than this share of the servers that may serve are healthy, the pool
	// balances over all of them, healthy or not (Envoy's panic mode).
	// Default 50; 0 (written `off` or `0%`) turns panic mode off; at most
	// 100.
	PanicThreshold int
	// SlowStart is the time over which a server that is added to a live
	// pool, or comes back to health, ramps its effective weight linearly
	// from 10% to 100% (`slow_start 30s`). Default 0 (full weight at once).
	SlowStart time.Duration
	// Retry is the retry policy (`retries { ... }`). Default
	// DefaultRetry: one more try after a connect failure or a reset.
	Retry Retry
	// MaxRequests caps the requests in flight to the pool
	// (`max_requests N`): past it a request fails at once with 503 and the
	// log names the limit. Default 0: no limit.
	MaxRequests int
	// MaxConnections caps the open connections to the pool's servers
	// (`max_connections N`; tunnels do not count): a request that finds
	// no idle connection and no free slot waits for one, at most
	// ConnectTimeout, then fails with 503. Default 0: no limit.
	MaxConnections int
	// MaxPending caps the requests waiting for a connection under
	// MaxConnections (`max_pending N`); more fail at once with 503.
	// Default 0: none may wait when the limit is reached.
	MaxPending int
	// SendProxy is "v1" or "v2" when each new connection to a server
	// starts with a PROXY protocol header carrying the client's address
	// (`send_proxy v1|v2`), for HTTP and TCP routes. Default "": none.
	SendProxy string
	// TLS, when non-nil, dials the servers over TLS (`tls { ... }`);
	// health checks use it too. Default nil: cleartext.
	TLS *UpstreamTLS
	// Protocol is how HTTP requests reach the servers (`protocol
	// http1|h2|h2c`): "http1", "h2" (HTTP/2 over TLS by ALPN; needs TLS),
	// or "h2c" (cleartext HTTP/2 with prior knowledge, as gRPC servers
	// speak it). A tcp route cannot use an h2c
	// upstream: it forwards raw bytes. Default "http1"; "" is read as
	// "http1".
	Protocol string
	// H2Fallback (`fallback http1` beside `protocol h2`) lets a server that does
	// not pick h2 by ALPN be spoken to over HTTP/1.1 instead of refused.
	H2Fallback bool
	Pos        Pos
}

// Server is one `server ADDR [weight N]` line.
type Server struct {
	Addr   string // host:port
	Weight int    // default 1; 0 takes no traffic
	Pos    Pos
}

// Route is a `route NAME { ... }` block.
type Route struct {
	Name string
	// Rule is the parsed match expression; RuleText is its text as written.
	Rule     *rule.Rule
	RuleText string
	// Priority is the explicit priority, or the rule's default (its length
	// in bytes) when none was written.
	Priority int
	// Upstream names the pool requests go to; empty when a terminal
	// middleware (respond, redirect) answers.
	Upstream string
	// Listeners restricts the route to these listeners; empty means all.
	Listeners   []string
	Middlewares []Middleware // in the order written
	// Access is the route's `allow` and `deny` lists, checked once the
	// route is chosen (after the listener's).
	Access
	// CORS answers preflights at the edge and marks the route's
	// responses for the origins it allows; nil: none (`cors { ... }`).
	CORS *CORS
	// ErrorPages are the bodies of the answers edgeway makes itself on
	// this route (before the listener's).
	ErrorPages []ErrorPage
	// Limits name the rate limits the route's requests count against,
	// in order; the first that refuses answers 429.
	Limits []string
	// BasicAuth asks for a user of an htpasswd file; nil: none.
	BasicAuth *BasicAuth
	// Compress compresses the route's responses for clients that accept
	// it; nil: none.
	Compress *Compress
	// ForwardAuth asks an auth service about each request; nil: none.
	ForwardAuth *ForwardAuth
	// JWT requires a valid bearer token; nil: none.
	JWT *JWT
	// JWTPolicy (`jwt_policy NAME`) requires a valid bearer token of
	// the named policy (Config.JWTs) instead of an inline JWT block; a
	// token a JWTClaim matcher already verified for the request is not
	// verified again. "": none.
	JWTPolicy string
	// StreamRequestBody (`request_buffering off`) sends a request body to
	// the server as it arrives, as for large uploads or a client stream
	// that waits for answers. Default false: a body is read whole first
	// (Buffers, Listener.BodyTimeout), before a server is picked. gRPC
	// and bodies of unknown length to an h2c upstream always stream.
	StreamRequestBody bool
	// StreamResponseBody (`response_buffering off`) sends a response body
	// to the client at the client's pace, holding the server's connection
	// until the client took it all. Default false: the body is read as
	// fast as the server sends it, into memory then a file (Buffers), and
	// the server's connection is free as soon as it ended. Event streams,
	// gRPC and answers with `X-Accel-Buffering: no` always stream.
	StreamResponseBody bool
	// ResponseTimeout (`response_timeout D` in the route) replaces the
	// pool's response_timeout for this route's requests. Default 0: the
	// pool's.
	ResponseTimeout time.Duration
	// ConnectTimeout and IdleTimeout (`connect_timeout D`, `idle_timeout
	// D` in the route) replace the pool's for this route's requests.
	// Default 0: the pool's.
	ConnectTimeout, IdleTimeout time.Duration
	// MaxBodyBytes (`max_body_bytes SIZE|unlimited` in the route)
	// replaces the listener's request body limit for this route: a
	// longer body is answered 413. Default 0: the listener's;
	// UnlimitedBody: none.
	MaxBodyBytes int64
	// Retry (`retries { ... }` in the route) replaces the pool's retry
	// attempts, conditions and body_buffer for this route; the retry
	// budget stays the pool's. Fields the block leaves out take the
	// defaults (DefaultRetry), not the pool's. Nil: the pool's.
	Retry *Retry
	// PolicyAt is where the route's own policy settings are written, by
	// directive name (connect_timeout, response_timeout, idle_timeout,
	// max_body_bytes, retries), for explain. Nil when it has none.
	PolicyAt map[string]Pos
	// Mirrors are the route's `mirror` lines, in file order.
	Mirrors []Mirror
	// Split, when set, shares the route's requests among several pools
	// (`to A 90%, B 10%`); Upstream is then its first pool. Nil: every
	// request goes to Upstream.
	Split *Split
	Pos   Pos
}

// Limit is a `limit NAME { rate N/s; burst N; key ...; max_keys N }`
// block: a rate limit that every route naming it (`limit NAME`) shares,
// one bucket per key.
type Limit struct {
	Name string
	// Rate is the sustained rate in requests per Per.
	Rate int
	Per  time.Duration // time.Second, time.Minute or time.Hour
	// Burst is how many requests a key may make at once above the rate
	// (the bucket's size). Default: Rate.
	Burst int
	// Key is what a bucket is kept per: "client_ip", "route" (one
	// bucket per route), "header" or "cookie" (KeyName's value; a request
	// without it shares the empty key).
	Key, KeyName string
	// MaxKeys bounds the buckets kept; past it the least recently
	// refilled go (counted). Default 100000.
	MaxKeys int
	// MaxInFlight caps a key's requests under way at once (0: no cap);
	// a limit has a rate, this cap, or both.
	MaxInFlight int
	Pos         Pos
}

// JWT is a route's `jwt { jwks FILE|URL; jwks_refresh D; issuer ISS;
// audience AUD; claim_header CLAIM HEADER; leeway D }` block: a request
// needs an `Authorization: Bearer` token signed by a key of the JWKS (RS256,
// ES256 or EdDSA), not expired, with the issuer and audience given.
type JWT struct {
	// Name is a main-level policy's name (`jwt NAME { ... }`); "" for a
	// route's inline block.
	Name     string
	JWKS     []byte // the key set file's content, read at load (watched)
	JWKSFile string
	// JWKSURL is where the key set is fetched from instead (`jwks
	// https://...`): in the background, kept while the URL fails, and
	// again at once (at most every 10s) for a token whose kid it lacks.
	JWKSURL string
	// JWKSRefresh is how long a fetched set is used when its answer has
	// no Cache-Control max-age (a max-age is honoured between 1 minute,
	// or JWKSRefresh when shorter, and 24 hours); with a URL, default
	// DefaultJWKSRefresh.
	JWKSRefresh time.Duration
	// JWKSCA (`jwks_ca FILE`) holds the PEM certificates an https jwks
	// URL's server must chain to, in place of the system roots (an
	// identity provider under a private CA). nil: the system roots.
	JWKSCA     []byte
	JWKSCAFile string
	Issuer     string
	Audience   string
	// ClaimHeaders copy string claims into request fields upstream, in
	// order: claim name, header name (canonical).
	ClaimHeaders [][2]string
	Leeway       time.Duration // allowed clock skew on exp and nbf; default 30s
	Pos          Pos
}

// DefaultJWKSRefresh is how often a jwks URL is fetched again when its
// answers give no max-age.
const DefaultJWKSRefresh = 5 * time.Minute

// ForwardAuth is a route's `forward_auth URL { timeout D; copy_headers
// NAME...; cache D }` block: before a request goes on, the auth service
// at URL is asked with the request's method, URI, host and credentials; a
// 2xx lets it through (with CopyHeaders from that answer), anything else
// is the client's answer.
type ForwardAuth struct {
	URL         string
	Timeout     time.Duration // default 2s; past it the client gets 503
	CopyHeaders []string      // canonical
	Cache       time.Duration // how long a 2xx for the same credentials counts; 0: off
	Pos         Pos
}

// Compress is a route's `compress { algorithms ...; types ...; min_size
// SIZE }` block.
type Compress struct {
	// Algorithms in order of preference when the client's Accept-Encoding
	// ranks several alike: "zstd", "br", "gzip". Default all three.
	Algorithms []string
	// Types are the media types compressed (parameters ignored).
	// Default DefaultCompressTypes.
	Types []string
	// MinSize: a response whose Content-Length is below it goes as it is.
	// Default 1 KiB.
	MinSize int64
	Pos     Pos
}

// DefaultCompressTypes are the media types a compress block compresses
// when it names none: text and the structured formats that shrink.
var DefaultCompressTypes = []string{"text/html", "text/css", "text/plain", "text/javascript", "text/event-stream",
	"application/javascript", "application/json", "application/xml", "application/wasm", "image/svg+xml"}

// BasicAuth is a route's `basic_auth FILE [REALM]` line: requests need
// the credentials of a user of the htpasswd file FILE (bcrypt hashes
// only), read at load and watched.
type BasicAuth struct {
	Realm string
	Users map[string]string // user -> bcrypt hash
	Pos   Pos
}

// ErrorPage is an `error_page CODE... file PATH|BODY` line: the body of
// the answers with one of Codes that edgeway makes itself (404, 403, 413,
// 502, 503, 504, ...), never an upstream's. Several lines for one code
// with different content types are chosen between by the request's
// Accept. In Body, $status and $request_id are replaced when it is sent.
type ErrorPage struct {
	Codes       []int
	ContentType string // from the file's extension (.html, .json); text/plain inline
	Body        string
	Pos         Pos
}

// CORS is a route's `cors` block (the Fetch standard's CORS protocol).
type CORS struct {
	// Origins are the allowed origins, exactly as browsers send them
	// (scheme://host[:port], lower case, no path); AnyOrigin is `*`.
	Origins   []string
	AnyOrigin bool
	// Methods a preflight may ask for. Default GET, HEAD, POST.
	Methods []string
	// Headers a preflight may ask for, canonical; none by default
	// (CORS-safelisted ones need none).
	Headers []string
	// ExposeHeaders are the response fields scripts may read.
	ExposeHeaders []string
	// Credentials allows cookies and authorization (never with `*`).
	Credentials bool
	// MaxAge is how long a browser may cache a preflight; 0 leaves the
	// browser's default (5 s).
	MaxAge time.Duration
	Pos    Pos
}

// Access is a pair of client address lists (`allow ADDR|CIDR|file
// PATH...`, `deny ...`): a client in Deny is refused; when Allow is not
// empty, a client in none of it is refused too (403). The client is the
// peer, after the PROXY protocol; for a peer in trusted_proxies, the last
// X-Forwarded-For address that is not a trusted proxy.
type Access struct {
	Allow, Deny []netip.Prefix
}

// TCPRoute is a `tcp route NAME { ... }` block.
type TCPRoute struct {
	Name      string
	Rule      *rule.Rule
	RuleText  string
	Priority  int
	Upstream  string
	Listeners []string
	// Terminate (`tls terminate`) has edgeway do the TLS handshake with
	// the listener's certificates and send the plaintext stream to the
	// server. Default false (`tls passthrough`): the TLS bytes pass
	// through untouched.
	Terminate bool
	Pos       Pos
}

// MiddlewareKind names one middleware.
type MiddlewareKind string

// The middlewares a route can list.
const (
	StripPrefix          MiddlewareKind = "strip_prefix"           // Arg: prefix removed from the path
	AddPrefix            MiddlewareKind = "add_prefix"             // Arg: prefix added to the path
	SetRequestHeader     MiddlewareKind = "set_header"             // Name, Arg
	RemoveRequestHeader  MiddlewareKind = "remove_header"          // Name
	SetResponseHeader    MiddlewareKind = "set_response_header"    // Name, Arg
	RemoveResponseHeader MiddlewareKind = "remove_response_header" // Name
	Redirect             MiddlewareKind = "redirect"               // Code, Arg: target; "$path" is the request path, "$query" the raw query
	Respond              MiddlewareKind = "respond"                // Code, Arg: body
	RedirectHTTPS        MiddlewareKind = "redirect_https"         // Code (default 308), Arg: port ("" for 443); only requests not over TLS are redirected, the others go on down the route
)

// Middleware is one middleware line of a route.
type Middleware struct {
	Kind MiddlewareKind
	Name string // header name, canonical form
	Arg  string
	Code int
	Pos  Pos
}

// Pos is a position in a configuration file. Line and Col count from 1.
type Pos struct {
	File string
	Line int
	Col  int
}

// Diagnostic is an error or warning at a position in a file.
type Diagnostic struct {
	Pos Pos
	Msg string
	// Source is the text of the line at Pos, for the caret display.
	Source string
	// Err is the underlying error when one caused the diagnostic (a file
	// that cannot be read); nil otherwise.
	Err error
}

// RouteCount is the number of routes listener l serves: the routes that
// name it or name no listener, and on a TLS listener the tcp routes that
// do.
func (c *Config) RouteCount(l Listener) int {
	serves := func(names []string) bool { return len(names) == 0 || slices.Contains(names, l.Name) }
	n := 0
	for _, r := range c.Routes {
		if serves(r.Listeners) {
			n++
		}
	}
	if slices.Contains(l.Protocols, "tls") {
		for _, r := range c.TCPRoutes {
			if serves(r.Listeners) {
				n++
			}
		}
	}
	return n
}
