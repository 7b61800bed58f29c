// Package health runs active health checks: an HTTP request or a TCP
// connection per server on a jittered interval, whatever the traffic.
// Checks use their own connections (a net.Dialer and a minimal HTTP/1.1
// exchange), never the proxy's pool, so a check sees what a new
// connection would and cannot take an idle connection from a request.
// A check costs one connection and a goroutine per server while it runs;
// between checks a server's loop holds one timer.
package health

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// Result is the outcome of one check.
type Result struct {
	OK bool
	// Reason says what failed ("connect: connection refused", "status 503
	// (expected 200-399)"), or what passed ("status 200").
	Reason  string
	Latency time.Duration
}

// Checker checks one server. Check must return by ctx's deadline.
type Checker interface {
	Check(ctx context.Context, addr string) Result
}

// Options are what a checker must know of its pool beyond the health
// block.
type Options struct {
	// SendProxy is the pool's send_proxy ("", "v1", "v2"): HTTP checks
	// then start with a PROXY header of the LOCAL kind.
	SendProxy string
	// H2C sends HTTP checks as HTTP/2 with prior knowledge (protocol h2c,
	// and h2 once TLS picked it).
	H2C bool
	// TLS, when non-nil, returns the tls.Config of a server: HTTP checks
	// then run over TLS with the pool's own settings (verification, SNI,
	// client certificate), so a server with a bad certificate fails them.
	TLS func(addr string) *tls.Config
}

// New returns the checker cfg describes: TCP for type tcp, else HTTP.
func New(cfg conf.HealthCheck, o Options) Checker {
	if cfg.Type == "tcp" {
		return TCP{}
	}
	return NewHTTP(cfg, o)
}

// Rand is a source of uniformly random 64-bit numbers
// (math/rand/v2.Uint64; tests inject a seeded one).
type Rand func() uint64

// Run calls check at once and then every interval, lengthened or
// shortened at random by up to jitter percent, until ctx ends. A panic in
// check is recovered, reported to onPanic and the loop goes on.
func Run(ctx context.Context, interval time.Duration, jitter int, rnd Rand, check func(context.Context), onPanic func(any)) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		safely(ctx, check, onPanic)
		t.Reset(Next(interval, jitter, rnd))
	}
}

func safely(ctx context.Context, check func(context.Context), onPanic func(any)) {
	defer func() {
		if r := recover(); r != nil {
			onPanic(r)
		}
	}()
	check(ctx)
}

// Next is interval with up to jitter percent added or taken at random.
func Next(interval time.Duration, jitter int, rnd Rand) time.Duration {
	if jitter <= 0 || interval <= 0 {
		return interval
	}
	span := uint64(interval) * uint64(jitter) / 100
	if span == 0 {
		return interval
	}
	return interval - time.Duration(span) + time.Duration(rnd()%(2*span+1))
}

// CheckTimeout runs c against addr with a timeout, stamping the latency
// and naming a timeout as such.
func CheckTimeout(ctx context.Context, c Checker, addr string, timeout time.Duration) Result {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	start := time.Now()
	r := c.Check(ctx, addr)
	r.Latency = time.Since(start)
	// A connection deadline set from ctx can end the check before ctx's own
	// timer has marked it done (that timer's goroutine may not have run
	// yet), and the latency, taken after ctx was made, can be a hair under
	// timeout: the clock against the deadline is what says it timed out.
	if !r.OK && (ctx.Err() == context.DeadlineExceeded || !time.Now().Before(deadline)) {
		r.Reason = fmt.Sprintf("timeout after %v (%s)", timeout, r.Reason)
	}
	return r
}
