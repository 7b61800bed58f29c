package conf

import (
	"strconv"
	"strings"

	"github.com/edgeway/edgeway/routes"
)

// Mirror is a route's `mirror UPSTREAM [PERCENT]` line: a copy of that
// share of the route's requests (default 100%) goes to UPSTREAM, whose
// answer is read and dropped. The copy never delays or changes the
// primary request: it is sent on its own goroutine, at most
// MirrorMaxInFlight at a time per mirror line (past that a copy is
// dropped, counted), and only for requests whose body is held whole in
// memory up to MirrorMaxBody (others are skipped, counted).
type Mirror struct {
	Upstream string
	Percent  int // 1..100
	Pos      Pos
}

// Mirror limits, per mirror line.
const (
	MirrorMaxInFlight = 64       // copies in flight; past it a copy is dropped
	MirrorMaxBody     = 64 << 10 // the largest body copied, bytes
)

// mirror reads `mirror UPSTREAM [PERCENT]`.
func mirror(b *builder, r *draft, d *routes.Directive) {
	m := Mirror{Upstream: d.Args[0].Value, Percent: 100, Pos: b.pos(d.Args[0].Pos)}
	for _, o := range r.mirrors {
		if o.Upstream == m.Upstream {
			b.errorf(d.Args[0].Pos, "mirror %q is listed twice", m.Upstream)
			return
		}
	}
	if len(d.Args) == 2 {
		a := d.Args[1]
		v, err := strconv.Atoi(strings.TrimSuffix(a.Value, "%"))
		switch {
		case err != nil || !strings.HasSuffix(a.Value, "%"):
			b.errorf(a.Pos, "mirror: invalid percentage %q (expected a whole number such as 10%%)", a.Value)
			return
		case v < 1 || v > 100:
			b.errorf(a.Pos, "mirror: %s is out of range (expected 1%% to 100%%)", a.Value)
			return
		}
		m.Percent = v
	}
	b.refs = append(b.refs, ref{ns: "upstream", name: m.Upstream, pos: d.Args[0].Pos})
	r.mirrors = append(r.mirrors, m)
	r.mirrorPos = append(r.mirrorPos, d.Args[0].Pos)
}

// checkMirrors holds a route's mirrors to its `to`: a mirror of the
// route's own upstream, or on a route that does not forward, is refused.
func (b *builder) checkMirrors(r *draft) {
	for i, m := range r.mirrors {
		switch {
		case r.upstream == "":
			b.errorf(r.mirrorPos[i], "mirror %q on route %q, which does not forward (`to`): there is no request to copy", m.Upstream, r.name)
		case m.Upstream == r.upstream:
			b.errorf(r.mirrorPos[i], "mirror %q is the route's own upstream: a copy would double its load", m.Upstream)
		}
	}
}
