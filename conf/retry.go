package conf

import (
	"strconv"

	"github.com/edgeway/edgeway/routes"
)

// Retry is the `retries { ... }` block of an upstream: when a try fails
// in a way that says nothing reached the application, or the server
// answered that it cannot serve, the request is sent again to another
// server of the pool. A request is retried only before any byte of a
// response reached the client, only when it has no body or a body small
// enough to keep (BodyBuffer), and only within the retry budget, so
// retries cannot multiply an outage.
type Retry struct {
	// Attempts is how many more tries a request may get after its first.
	// Default 1; 0 turns retries off.
	Attempts int
	// ConnectFailure retries a request whose connection could not be
	// opened (nothing was sent: safe for every method). Default true.
	ConnectFailure bool
	// Reset retries an idempotent request whose connection failed before
	// any byte of a response (a reset or close, not a timeout). Default
	// true.
	Reset bool
	// Statuses are response statuses (502, 503 or 504) after which an
	// idempotent request is retried; the response is discarded. Default
	// none.
	Statuses []int
	// Budget is the share of the pool's requests in flight that may be
	// retries at one time, in percent (Envoy's retry budget). Default 20;
	// at most 100.
	Budget int
	// MinConcurrent is the number of retries always allowed at one time,
	// whatever the budget says (so a quiet pool can retry). Default 3.
	MinConcurrent int
	// BodyBuffer is the largest request body kept in memory so that the
	// request can be retried: a body up to this size is read whole
	// before the first try; a larger one streams and is never retried.
	// Default 64KiB; 0 never retries a request with a body.
	BodyBuffer int64
}

// DefaultRetry is the retry policy of an upstream without a retries
// block: one more try after a connect failure or a reset.
func DefaultRetry() Retry {
	return Retry{Attempts: 1, ConnectFailure: true, Reset: true, Budget: 20, MinConcurrent: 3, BodyBuffer: 64 << 10}
}

func retryDirective(b *builder, u *Upstream, d *routes.Directive) {
	r := DefaultRetry()
	run(b, retryTable, &r, d.Block.Directives)
	u.Retry = r
}

var retryTable = table[*Retry]{
	"attempts":       func(b *builder, r *Retry, d *routes.Directive) { b.setIntRange(d, 0, 10, "", &r.Attempts) },
	"on":             retryOn,
	"budget":         func(b *builder, r *Retry, d *routes.Directive) { b.setPercent(d, 0, 100, "", &r.Budget) },
	"min_concurrent": func(b *builder, r *Retry, d *routes.Directive) { b.setInt(d, 0, &r.MinConcurrent) },
	"body_buffer":    func(b *builder, r *Retry, d *routes.Directive) { b.setSizeRange(d, 0, 16<<20, &r.BodyBuffer) },
}

// retryOn reads `on connect_failure|reset|502|503|504...`; it replaces
// the default conditions.
func retryOn(b *builder, r *Retry, d *routes.Directive) {
	r.ConnectFailure, r.Reset, r.Statuses = false, false, nil
	for _, a := range d.Args {
		switch a.Value {
		case "connect_failure":
			r.ConnectFailure = true
		case "reset":
			r.Reset = true
		case "502", "503", "504":
			code, _ := strconv.Atoi(a.Value)
			r.Statuses = append(r.Statuses, code)
		default:
			b.errorf(a.Pos, "retries: unknown condition %q (expected connect_failure, reset, 502, 503 or 504)", a.Value)
		}
	}
}
