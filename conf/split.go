package conf

import (
	"math"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// A route's traffic split: `to api-v1 90%, api-v2 10%` sends each pool
// its share of the route's requests, optionally sticky per client
// (`sticky cookie NAME|header NAME`) and with an automatic rollback of a
// failing pool (`rollback { error_rate 5% over 30s; min_requests 100 }`).

// ShareScale is what a whole split adds up to: shares are kept in
// hundredths of a percent (basis points), so 100% is 10000 and the
// smallest share is 0.01%.
const ShareScale = 10000

// Split is a route's traffic split across pools.
type Split struct {
	// Pools are the pools in the order written, each with its share;
	// the shares add up to ShareScale exactly. At least two.
	Pools []SplitPool
	// Sticky keeps a client on one pool; nil: every request is placed
	// on its own.
	Sticky *SplitSticky
	// Rollback sets a failing pool's share to 0; nil: no rollback.
	Rollback *Rollback
}

// SplitPool is one pool of a split and its share.
type SplitPool struct {
	Upstream string
	// Share is the pool's part of the traffic in basis points (0 to
	// ShareScale). 0 is allowed: the pool is in the split but gets
	// nothing until its share is raised through the admin API.
	Share int
	Pos   Pos
}

// SplitSticky keeps a client on the pool it was placed on while the
// shares stay as they are. Exactly one field is set.
type SplitSticky struct {
	// Cookie names the cookie edgeway sets on the first answer to hold
	// the client's pool (`sticky cookie NAME`).
	Cookie string
	// Header names a request header whose value (a user or session id
	// the client sends) picks the pool by its hash (`sticky header
	// NAME`). A request without it is placed like any other.
	Header string
	Pos    Pos
}

// Rollback is `rollback { error_rate PERCENT [over DURATION];
// min_requests N }`: a pool whose failure rate (5xx answers and upstream
// failures; never 4xx) over the window exceeds the other pools' by more
// than ErrorRate, with at least MinRequests requests in the window, gets
// share 0 until an operator sets its share again.
type Rollback struct {
	// ErrorRate is the margin, a fraction from 0.0001 to 1 (5% is 0.05).
	// Default 0.05.
	ErrorRate float64
	// Window is the span the rates are measured over. Default 30s,
	// at least 1s.
	Window time.Duration
	// MinRequests is the fewest requests the pool must have had in the
	// window before it can be rolled back. Default 100, at least 1.
	MinRequests int
	Pos         Pos
}

// splitTo reads a route's `to`: one pool, or pools with shares.
func splitTo(b *builder, r *draft, d *routes.Directive) {
	if len(d.Args) == 1 {
		to(b, r, d)
		return
	}
	s := &Split{}
	sum, ok := 0, true
	args := d.Args
	for len(args) > 0 {
		if args[0].Value == "," {
			args = args[1:]
			continue
		}
		name := args[0]
		if len(args) == 1 {
			b.errorf(name.Pos, "to: pool %q has no share (expected `to POOL SHARE%%, POOL SHARE%%...`)", name.Value)
			return
		}
		v, good := b.share(d.Name, args[1])
		args = args[2:]
		ok = ok && good
		for _, p := range s.Pools {
			if p.Upstream == name.Value {
				b.errorf(name.Pos, "to: pool %q is named twice in the split (first at %s)", name.Value, p.Pos)
				ok = false
			}
		}
		if len(s.Pools) == 0 {
			r.upstream, r.toPos = name.Value, name.Pos // draft checks it
		} else {
			b.refs = append(b.refs, ref{ns: "upstream", name: name.Value, pos: name.Pos})
		}
		s.Pools = append(s.Pools, SplitPool{Upstream: name.Value, Share: v, Pos: b.pos(name.Pos)})
		sum += v
	}
	switch {
	case !ok:
	case len(s.Pools) < 2:
		b.errorf(d.Args[0].Pos, "to: a split needs two pools or more (expected `to POOL SHARE%%, POOL SHARE%%...`; for one pool write `to POOL`)")
	case sum != ShareScale:
		b.errorf(d.Args[0].Pos, "to: the shares add up to %s, expected exactly 100%%", ShareText(sum))
	default:
		r.split = s
	}
}

// share reads `90%`, `0.5%` or `12.25%` (a "," after it is allowed) as
// basis points.
func (b *builder) share(directive string, a routes.Arg) (int, bool) {
	num, pct := strings.CutSuffix(strings.TrimSuffix(a.Value, ","), "%")
	v, err := strconv.ParseFloat(num, 64)
	if !pct {
		err = strconv.ErrSyntax
	}
	bp := math.Round(v * 100)
	switch {
	case err != nil || math.IsNaN(v):
		b.errorf(a.Pos, "%s: invalid percentage %q (expected a number with %%, such as 90%% or 0.5%%)", directive, a.Value)
	case v < 0 || v > 100:
		b.errorf(a.Pos, "%s: %s is out of range (expected 0%% to 100%%)", directive, a.Value)
	case math.Abs(bp-v*100) > 1e-6:
		b.errorf(a.Pos, "%s: %s has more than two decimals (the smallest step is 0.01%%)", directive, a.Value)
	default:
		return int(bp), true
	}
	return 0, false
}

// ShareText writes basis points as a percentage: 9000 is "90%", 50 is
// "0.5%".
func ShareText(bp int) string {
	return strconv.FormatFloat(float64(bp)/100, 'f', -1, 64) + "%"
}

// sticky reads `sticky cookie NAME` or `sticky header NAME`.
func sticky(b *builder, r *draft, d *routes.Directive) {
	kind, ok := b.oneOf(d.Args[0], "sticky key", []string{"cookie", "header"})
	if !ok {
		return
	}
	name := d.Args[1]
	if !validCookieName(name.Value) {
		b.errorf(name.Pos, "sticky: invalid %s name %s", kind, name)
		return
	}
	s := &SplitSticky{Pos: b.pos(d.Pos)}
	if kind == "cookie" {
		s.Cookie = name.Value
	} else {
		s.Header = textproto.CanonicalMIMEHeaderKey(name.Value)
	}
	r.sticky, r.stickyPos = s, d.Pos
}

// rollbackDirective reads a route's `rollback { ... }` block.
func rollbackDirective(b *builder, r *draft, d *routes.Directive) {
	rb := &Rollback{ErrorRate: 0.05, Window: 30 * time.Second, MinRequests: 100, Pos: b.pos(d.Pos)}
	run(b, rollbackTable, rb, d.Block.Directives)
	r.rollback, r.rollbackPos = rb, d.Pos
}

var rollbackTable = table[*Rollback]{
	"error_rate": func(b *builder, rb *Rollback, d *routes.Directive) {
		bp, ok := b.share(d.Name, d.Args[0])
		if ok && bp == 0 {
			b.errorf(d.Args[0].Pos, "error_rate: 0%% would roll back on any failure (expected 0.01%% to 100%%)")
		} else if ok {
			rb.ErrorRate = float64(bp) / ShareScale
		}
		switch {
		case len(d.Args) == 2 || (len(d.Args) == 3 && d.Args[1].Value != "over"):
			b.errorf(d.Args[1].Pos, "error_rate: expected `over DURATION` after the rate, got %s", d.Args[1])
		case len(d.Args) == 3:
			w, err := routes.ParseDuration(d.Args[2].Value)
			if err != nil || w < time.Second {
				b.errorf(d.Args[2].Pos, "error_rate: invalid window %s (expected a duration of 1s or more, such as 30s)", d.Args[2])
				return
			}
			rb.Window = w
		}
	},
	"min_requests": func(b *builder, rb *Rollback, d *routes.Directive) { b.setInt(d, 1, &rb.MinRequests) },
}

// finishSplit checks what goes with a split once the route is read.
func (b *builder) finishSplit(r *draft) *Split {
	if r.split == nil {
		if r.sticky != nil {
			b.errorf(r.stickyPos, "sticky: route %q does not split its traffic (expected `to POOL SHARE%%, POOL SHARE%%...`)", r.name)
		}
		if r.rollback != nil {
			b.errorf(r.rollbackPos, "rollback: route %q does not split its traffic (expected `to POOL SHARE%%, POOL SHARE%%...`)", r.name)
		}
		return nil
	}
	r.split.Sticky, r.split.Rollback = r.sticky, r.rollback
	return r.split
}

// validCookieName: a cookie name is an HTTP token (RFC 6265 §4.1.1).
func validCookieName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}
