package main

import (
	"encoding/json"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/upstream"
)

// The JSON the upstream endpoints answer, apart from the pools' own
// types so that the API's names and units (snake_case, durations in
// seconds, null for "not set") are written down in one place and the
// pools' types stay free of them. testdata/admin holds the shapes.

// upstreamList is GET /api/upstreams.
type upstreamList struct {
	Upstreams []poolView `json:"upstreams"`
	// Dropped lists the overrides dropped with their server since start.
	Dropped []droppedOverride `json:"dropped_overrides"`
}

// poolView is a pool: GET /api/upstreams/{pool} and a PATCH's answer.
type poolView struct {
	Name    string      `json:"name"`
	Balance balanceView `json:"balance"`
	// Panic is true while fewer than PanicThreshold percent of the
	// servable servers are healthy, so all of them take traffic.
	Panic            bool         `json:"panic"`
	PanicThreshold   int          `json:"panic_threshold"`
	SlowStartSeconds float64      `json:"slow_start_seconds"`
	InFlight         int64        `json:"in_flight"`
	Servers          []serverView `json:"servers"`
}

// balanceView is the `balance` directive: the policy, and for hash its
// key and the header or cookie it names, for sticky its cookie.
type balanceView struct {
	Policy  string `json:"policy"`
	HashKey string `json:"hash_key,omitempty"`
	Header  string `json:"header,omitempty"`
	Cookie  string `json:"cookie,omitempty"`
}

// serverView is one server of a pool.
type serverView struct {
	Address string `json:"address"`
	ID      string `json:"id"`
	// Weight is the configured weight.
	Weight int `json:"weight"`
	// Override is nil (null) when no override is set.
	Override *overrideView `json:"override"`
	// OverrideBy and OverrideAt name the instance that set the override
	// and when, in a cluster (absent otherwise).
	OverrideBy      string                `json:"override_by,omitempty"`
	OverrideAt      *time.Time            `json:"override_at,omitempty"`
	EffectiveWeight float64               `json:"effective_weight"`
	State           string                `json:"state"`
	Since           time.Time             `json:"since"`
	Reason          string                `json:"reason"`
	Transitions     []upstream.Transition `json:"transitions"`
	LastCheck       string                `json:"last_check"`
	Ejections       int                   `json:"ejections"`
	InFlight        int64                 `json:"in_flight"`
	Requests        uint64                `json:"requests"`
	Failures        uint64                `json:"failures"`
}

// overrideView is the overrides set on a server, each field present only
// when set: the PATCH body that sets them.
type overrideView struct {
	Weight   *int  `json:"weight,omitempty"`
	Drain    *bool `json:"drain,omitempty"`
	Disabled *bool `json:"disabled,omitempty"`
}

// droppedOverride is an override that no longer applies.
type droppedOverride struct {
	Upstream string       `json:"upstream"`
	Server   string       `json:"server"`
	Override overrideView `json:"override"`
	Reason   string       `json:"reason"`
	Time     time.Time    `json:"time"`
}

func newPoolView(ps upstream.PoolStatus) poolView {
	v := poolView{Name: ps.Name, Balance: newBalanceView(ps.Balance), Panic: ps.Panic, PanicThreshold: ps.PanicThreshold,
		SlowStartSeconds: ps.SlowStart.Seconds(), InFlight: ps.InFlight, Servers: make([]serverView, len(ps.Servers))}
	for i, s := range ps.Servers {
		v.Servers[i] = serverView{Address: s.Addr, ID: s.ID, Weight: s.Weight, EffectiveWeight: s.EffectiveWeight,
			State: s.State.String(), Since: s.Since, Reason: s.Reason, Transitions: s.Transitions, LastCheck: s.LastCheck,
			Ejections: s.Ejections, InFlight: s.InFlight, Requests: s.Requests, Failures: s.Failures}
		if !s.Override.IsZero() {
			o := newOverrideView(s.Override)
			v.Servers[i].Override = &o
		}
	}
	return v
}

func newBalanceView(b conf.Balance) balanceView {
	v := balanceView{Policy: b.Policy, HashKey: b.HashKey}
	if v.Policy == "" {
		v.Policy = conf.RoundRobin
	}
	switch {
	case b.Policy == conf.Sticky || b.HashKey == conf.HashCookie:
		v.Cookie = b.Name
	case b.HashKey == conf.HashHeader:
		v.Header = b.Name
	}
	return v
}

func newOverrideView(o upstream.OverrideStatus) overrideView {
	return overrideView{Weight: o.Weight, Drain: o.Drain, Disabled: o.Disabled}
}

// overrideText writes an override as the PATCH body that sets it.
func overrideText(o upstream.OverrideStatus) string {
	b, _ := json.Marshal(newOverrideView(o))
	return string(b)
}
