package router

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// The split routes' state as the admin API reads and changes it: status,
// the shares a PATCH sets, and the overrides the journal keeps
// (split.go has the placement).

// SplitStatus is a split route's state, as the admin API shows it.
type SplitStatus struct {
	Route string
	Pools []SplitPoolStatus
	// Override: the shares were set through the admin API.
	Override bool
	Sticky   string         // "cookie NAME", "header NAME" or ""
	Rollback *conf.Rollback // nil: none
}

// SplitPoolStatus is one pool of a split.
type SplitPoolStatus struct {
	Upstream string
	// Configured is the share in the files, Share the one in effect
	// (the admin API's, or 0 when rolled back), in basis points.
	Configured, Share int
	// RolledBack is when the rollback set the share to 0; zero: never,
	// or since restored.
	RolledBack time.Time
	// Requests counts the requests placed on the pool since start;
	// WindowRequests and WindowFailures those in the rollback window.
	Requests, Rollbacks            uint64
	WindowRequests, WindowFailures uint64
}

// Splits returns every split route's state, by route name.
func (r *Router) Splits() []SplitStatus {
	var out []SplitStatus
	if m := r.splits.view.Load(); m != nil {
		for _, name := range slices.Sorted(maps.Keys(*m)) {
			out = append(out, (*m)[name].status())
		}
	}
	return out
}

// Split returns one split route's state.
func (r *Router) Split(route string) (SplitStatus, bool) {
	c := r.splitControl(route)
	if c == nil {
		return SplitStatus{}, false
	}
	return c.status(), true
}

func (r *Router) splitControl(route string) *splitControl {
	if m := r.splits.view.Load(); m != nil {
		return (*m)[route]
	}
	return nil
}

// status reads the control's state.
func (c *splitControl) status() SplitStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.live.Load()
	s := SplitStatus{Route: c.route, Override: c.override != nil, Rollback: c.rollback, Sticky: c.sticky}
	now := time.Now()
	for i, n := range c.pools {
		p := SplitPoolStatus{Upstream: n, Configured: c.configured[i], Share: st.shares[i], RolledBack: c.rolledBack[i],
			Requests: c.counters[i].requests.Load(), Rollbacks: c.counters[i].rollbacks.Load()}
		if c.rollback != nil {
			p.WindowRequests, p.WindowFailures = c.counters[i].window.sum(now, c.rollback.Window)
		}
		s.Pools = append(s.Pools, p)
	}
	return s
}

// SetSplit sets a split route's shares (pool name -> basis points; every
// pool of the route, adding up to conf.ShareScale), or with nil clears
// the override: the files' shares apply again. Either way the pools the
// rollback set to 0 are restored. It fails with ErrUnknownSplit or
// ErrBadSplit (wrapped) and then changes nothing.
func (r *Router) SetSplit(route string, shares map[string]int) error {
	c := r.splitControl(route)
	if c == nil {
		return fmt.Errorf("route %q: %w", route, ErrUnknownSplit)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var o []int
	if shares != nil {
		var err error
		if o, err = c.sharesOf(shares); err != nil {
			return fmt.Errorf("route %q: %w", route, err)
		}
	}
	c.override = o
	clear(c.rolledBack)
	c.publish()
	c.log.Info("split shares set", "route", route, "shares", sharesText(c.pools, c.live.Load().shares), "override", o != nil)
	return nil
}

// CheckSplit reports whether SetSplit(route, shares) would be accepted,
// changing nothing (a cluster checks a PATCH before writing it to etcd).
func (r *Router) CheckSplit(route string, shares map[string]int) error {
	c := r.splitControl(route)
	if c == nil {
		return fmt.Errorf("route %q: %w", route, ErrUnknownSplit)
	}
	if shares == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.sharesOf(shares); err != nil {
		return fmt.Errorf("route %q: %w", route, err)
	}
	return nil
}

// sharesOf orders shares by the route's pools, checking them. c.mu held.
func (c *splitControl) sharesOf(shares map[string]int) ([]int, error) {
	out := make([]int, len(c.pools))
	sum := 0
	for i, n := range c.pools {
		v, ok := shares[n]
		if !ok {
			return nil, fmt.Errorf("no share for pool %q (expected one for each of %s): %w", n, strings.Join(c.pools, ", "), ErrBadSplit)
		}
		if v < 0 || v > conf.ShareScale {
			return nil, fmt.Errorf("pool %q: share %s is out of range (expected 0%% to 100%%): %w", n, conf.ShareText(v), ErrBadSplit)
		}
		out[i] = v
		sum += v
	}
	for _, n := range slices.Sorted(maps.Keys(shares)) {
		if !slices.Contains(c.pools, n) {
			return nil, fmt.Errorf("pool %q is not in the split (expected %s): %w", n, strings.Join(c.pools, ", "), ErrBadSplit)
		}
	}
	if sum != conf.ShareScale {
		return nil, fmt.Errorf("the shares add up to %s, expected exactly 100%%: %w", conf.ShareText(sum), ErrBadSplit)
	}
	return out, nil
}

func sharesText(pools []string, shares []int) string {
	parts := make([]string, len(pools))
	for i, n := range pools {
		parts[i] = n + " " + conf.ShareText(shares[i])
	}
	return strings.Join(parts, ", ")
}

// SplitOverride is what a split keeps across restarts: the admin API's
// shares (nil: none) and the pools the rollback set to 0.
type SplitOverride struct {
	Shares     map[string]int       // pool -> basis points; nil: the files'
	RolledBack map[string]time.Time // pool -> when
}

// SplitOverrides returns the overrides in effect, by route: what the
// journal holds.
func (r *Router) SplitOverrides() map[string]SplitOverride {
	out := map[string]SplitOverride{}
	m := r.splits.view.Load()
	if m == nil {
		return out
	}
	for name, c := range *m {
		c.mu.Lock()
		var o SplitOverride
		if c.override != nil {
			o.Shares = map[string]int{}
			for i, n := range c.pools {
				o.Shares[n] = c.override[i]
			}
		}
		for i, t := range c.rolledBack {
			if !t.IsZero() {
				if o.RolledBack == nil {
					o.RolledBack = map[string]time.Time{}
				}
				o.RolledBack[c.pools[i]] = t
			}
		}
		c.mu.Unlock()
		if o.Shares != nil || o.RolledBack != nil {
			out[name] = o
		}
	}
	return out
}

// RestoreSplit applies an override read back from the journal at start.
func (r *Router) RestoreSplit(route string, o SplitOverride) error {
	c := r.splitControl(route)
	if c == nil {
		return fmt.Errorf("route %q: %w", route, ErrUnknownSplit)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var shares []int
	if o.Shares != nil {
		var err error
		if shares, err = c.sharesOf(o.Shares); err != nil {
			return fmt.Errorf("route %q: %w", route, err)
		}
	}
	rolled := make([]time.Time, len(c.pools))
	for n, t := range o.RolledBack {
		i := slices.Index(c.pools, n)
		if i < 0 {
			return fmt.Errorf("route %q: rolled-back pool %q is not in the split: %w", route, n, ErrBadSplit)
		}
		rolled[i] = t
	}
	c.override, c.rolledBack = shares, rolled
	c.publish()
	return nil
}

// OnSplitRollback sets fn to be called, on a goroutine of its own, after
// a rollback set a pool's share to 0 (cmd/edgeway writes the journal).
func (r *Router) OnSplitRollback(fn func(route string)) { r.splits.hook.Store(&fn) }
