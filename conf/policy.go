package conf

import (
	"time"

	"github.com/edgeway/edgeway/routes"
)

// A route's own policy: connect_timeout, idle_timeout, max_body_bytes
// and a retries block that replace the pool's (or the listener's) for
// the route's requests (response_timeout is read beside them).

// routePolicy is what a route block sets of its policy.
type routePolicy struct {
	connect, idle time.Duration
	maxBody       int64
	retry         *Retry
	at            map[string]Pos
}

// mark records where a policy directive is written.
func (p *routePolicy) mark(b *builder, d *routes.Directive) {
	if p.at == nil {
		p.at = map[string]Pos{}
	}
	p.at[d.Name] = b.pos(d.Pos)
}

// routeMaxBody reads the route's `max_body_bytes SIZE|unlimited`.
func routeMaxBody(b *builder, r *draft, d *routes.Directive) {
	var l Listener
	maxBodyBytes(b, &l, d)
	r.policy.maxBody = l.MaxBodyBytes
	r.policy.mark(b, d)
}

// routeRetries reads the route's `retries { ... }`: the pool's block
// less the budget, which is the pool's to keep.
func routeRetries(b *builder, r *draft, d *routes.Directive) {
	rt := DefaultRetry()
	for _, c := range d.Block.Directives {
		if c.Name == "budget" || c.Name == "min_concurrent" {
			b.errorf(c.Pos, "%s: the retry budget is the pool's (set it in the upstream's retries block)", c.Name)
		}
	}
	run(b, retryTable, &rt, d.Block.Directives)
	r.policy.retry = &rt
	r.policy.mark(b, d)
}
