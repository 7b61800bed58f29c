package conf

import "time"

// The policies of `balance`.
const (
	RoundRobin   = "round_robin"   // smooth weighted round robin
	LeastRequest = "least_request" // power of two choices on in-flight/weight
	Random       = "random"        // weighted random
	Hash         = "hash"          // consistent hash (Maglev) on a request key
	Sticky       = "sticky"        // cookie affinity, round robin otherwise
)

// The keys of `balance hash KEY`.
const (
	HashHeader   = "header"    // HashName is the header name
	HashCookie   = "cookie"    // HashName is the cookie name
	HashClientIP = "client_ip" // the client's IP address (the TCP peer)
	HashPath     = "path"      // the request path, without the query
)

// Balance is the `balance POLICY [ARGS]` line of an upstream block:
// `balance round_robin`, `balance least_request`, `balance random`,
// `balance hash header NAME|cookie NAME|client_ip|path` or
// `balance sticky COOKIE`.
type Balance struct {
	// Policy is one of RoundRobin, LeastRequest, Random, Hash, Sticky.
	// Default (and zero value) RoundRobin; "" is read as RoundRobin.
	Policy string
	// HashKey is what Hash hashes: HashHeader, HashCookie, HashClientIP
	// or HashPath. Empty for other policies. A request without the key
	// (no such header or cookie) is balanced as Random.
	HashKey string
	// Name is the header or cookie name of `hash header|cookie NAME`, or
	// the cookie of `sticky COOKIE`.
	Name string
}

// StatusRange is an inclusive range of HTTP status codes (`200-299`, or
// one code `204`).
type StatusRange struct{ Lo, Hi int }

// HealthCheck is the `health { ... }` block of an upstream: one check per
// server every Interval, whatever the traffic.
type HealthCheck struct {
	// Type is "http" (a request, the answer judged by Expect and Body) or
	// "tcp" (a connection opened and closed). Default "http".
	Type string
	// Path is the request target of an HTTP check. Default "/".
	Path string
	// Method is the method of an HTTP check. Default GET.
	Method string
	// Host is the Host header of an HTTP check. Default "" (the server's
	// address).
	Host string
	// Expect lists the status ranges that pass (`expect 200-299 304`).
	// Default 200-399.
	Expect []StatusRange
	// Body, when not empty, must occur in the first 64 KiB of the
	// response body for the check to pass. Default "".
	Body string
	// Interval is the time between two checks of one server. Default 5s.
	Interval time.Duration
	// Jitter is a percentage of Interval by which each wait is randomly
	// lengthened or shortened, so that checks of many servers spread out.
	// Default 10; 0 means none; at most 50.
	Jitter int
	// Timeout bounds one check (connect, request and answer). Default 2s;
	// at most Interval.
	Timeout time.Duration
	// Healthy is the number of consecutive passing checks that make an
	// unhealthy server healthy. Default 2.
	Healthy int
	// Unhealthy is the number of consecutive failing checks that make a
	// healthy server unhealthy. Default 3.
	Unhealthy int
	// InitialHealthy says how a new server starts: true (`initial
	// healthy`) takes traffic at once; false (`initial unhealthy`, the
	// default) waits for its first check, which runs at once and needs to
	// pass only once.
	InitialHealthy bool
}

// DefaultHealthCheck returns a HealthCheck with every default filled in.
func DefaultHealthCheck() HealthCheck {
	return HealthCheck{Type: "http", Path: "/", Method: "GET", Expect: []StatusRange{{200, 399}},
		Interval: 5 * time.Second, Jitter: 10, Timeout: 2 * time.Second, Healthy: 2, Unhealthy: 3}
}

// Outlier is the `outlier { ... }` block: passive ejection of a server
// that fails the requests it is given. Only the server's own failures
// count, never a client that went away or sent a bad body.
type Outlier struct {
	// Consecutive5xx ejects a server after this many responses in a row
	// that were 5xx or failed (no valid response). Default 5; 0 (written
	// `off`) disables it.
	Consecutive5xx int
	// ConsecutiveConnectFailures ejects a server after this many failed
	// connection attempts in a row. Default 3; 0 (written `off`) disables
	// it.
	ConsecutiveConnectFailures int
	// BaseEjection is the time of a first ejection; the n-th ejection
	// lasts n times as long, up to MaxEjection. The count starts again
	// after a server went MaxEjection without being ejected. Default 30s.
	BaseEjection time.Duration
	// MaxEjection caps one ejection. Default 5m; at least BaseEjection.
	MaxEjection time.Duration
	// MaxEjectionPercent caps the share of the pool's servers that can be
	// ejected at once; an ejection that would pass it is skipped (with
	// 50% of 3 servers, one at most). Default 50; at most 100.
	MaxEjectionPercent int
}

// DefaultOutlier returns an Outlier with every default filled in.
func DefaultOutlier() Outlier {
	return Outlier{Consecutive5xx: 5, ConsecutiveConnectFailures: 3, BaseEjection: 30 * time.Second,
		MaxEjection: 5 * time.Minute, MaxEjectionPercent: 50}
}

// Breaker is the `breaker { ... }` block: a per-server error-rate circuit
// breaker. Closed, it counts requests over a sliding Window; when at least
// MinRequests were seen and ErrorRate percent or more of them failed (5xx
// or no valid response), it opens: the server takes no traffic for
// CoolDown, then goes half-open and takes Trials requests; if they all
// succeed it closes, if one fails it opens again.
type Breaker struct {
	// ErrorRate is the failure percentage that opens the breaker.
	// Default 50; from 1 to 100.
	ErrorRate int
	// MinRequests is the fewest requests in the window for the rate to
	// count. Default 20; at least 1.
	MinRequests int
	// Window is the sliding window the rate is measured over, in 10
	// buckets. Default 10s.
	Window time.Duration
	// CoolDown is how long the breaker stays open. Default 30s.
	CoolDown time.Duration
	// Trials is the number of requests let through half-open, all of
	// which must succeed to close it. Default 3; at least 1.
	Trials int
}

// DefaultBreaker returns a Breaker with every default filled in.
func DefaultBreaker() Breaker {
	return Breaker{ErrorRate: 50, MinRequests: 20, Window: 10 * time.Second, CoolDown: 30 * time.Second, Trials: 3}
}
