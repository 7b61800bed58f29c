package upstream

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/edgeway/edgeway/conf"
)

// ErrUnknownServer is returned (wrapped) by SetOverride for an address the
// pool does not list.
var ErrUnknownServer = errors.New("no such server")

// ErrBadOverride is returned (wrapped) by SetOverride for a value out of
// range.
var ErrBadOverride = errors.New("invalid override")

// MaxOverrideWeight bounds a runtime weight: the configuration's bound,
// so that a weight the files accept is accepted through the admin API too.
const MaxOverrideWeight = conf.MaxWeight

// Override changes a server at run time, as the admin API's PATCH does. A
// nil field leaves that override as it is; a Clear field removes it (the
// configured value applies again). Overrides live in the server's state:
// they survive a reload while the server stays in the files.
type Override struct {
	// Weight replaces the configured weight, 0 to MaxOverrideWeight; 0
	// takes the server out of balancing (as a drain, but without the
	// draining state).
	Weight *int
	// Drain, when true, stops new requests to the server; those in flight
	// finish.
	Drain *bool
	// Disabled, when true, stops new requests, even in panic mode.
	Disabled *bool
	// ClearWeight, ClearDrain and ClearDisabled remove the override.
	ClearWeight, ClearDrain, ClearDisabled bool
}

// SetOverride applies o to the server with address addr. It fails with
// ErrUnknownServer or ErrBadOverride (wrapped) and then changes nothing.
func (p *Pool) SetOverride(addr string, o Override) error {
	s := p.Server(addr)
	if s == nil {
		return fmt.Errorf("upstream %s: server %s: %w", p.cfg.Name, addr, ErrUnknownServer)
	}
	if o.Weight != nil && (*o.Weight < 0 || *o.Weight > MaxOverrideWeight) {
		return fmt.Errorf("upstream %s: server %s: weight %d out of range 0 to %d: %w",
			p.cfg.Name, addr, *o.Weight, MaxOverrideWeight, ErrBadOverride)
	}
	st, now := s.State, p.now()
	// Lock order (ServerState.mu): the state's mu is let go of before
	// Pool.mu is taken for the Maglev table below.
	st.mu.Lock()
	m := &st.m
	reason := o.apply(m)
	st.override.Store(int32(m.weight))
	st.group.epoch.Add(1) // weights count even without a state change
	tr, ok := st.settle(now, reason, p.cfg.SlowStart)
	st.mu.Unlock()
	// One line per change: the state change it caused (its reason is
	// the change), else the change alone.
	if ok {
		p.logTransition(s, tr)
	} else {
		p.log.Info("upstream server override", "upstream", p.cfg.Name, "server", addr, "change", reason)
	}
	if p.cfg.Balance.Policy == conf.Hash && (o.Weight != nil || o.ClearWeight) {
		p.mu.Lock()
		p.policy = p.maglev()
		p.mu.Unlock()
	}
	return nil
}

// apply changes m's overrides and describes the change.
func (o Override) apply(m *machine) string {
	reason := "admin:"
	if o.ClearWeight {
		m.weight, reason = -1, reason+" weight cleared"
	}
	if o.Weight != nil {
		m.weight, reason = *o.Weight, reason+" weight "+strconv.Itoa(*o.Weight)
	}
	setTri := func(clear bool, v *bool, dst *tri, name string) {
		if clear {
			*dst, reason = unset, reason+" "+name+" cleared"
		}
		if v != nil {
			*dst, reason = off, reason+" "+name+" "+strconv.FormatBool(*v)
			if *v {
				*dst = on
			}
		}
	}
	setTri(o.ClearDrain, o.Drain, &m.drain, "drain")
	setTri(o.ClearDisabled, o.Disabled, &m.disabled, "disabled")
	return reason
}
