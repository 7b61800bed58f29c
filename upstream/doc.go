// Package upstream selects backends and keeps connections to them. A Pool
// owns one conf.Upstream: its servers, a balancer and one keep-alive
// http.Transport; a Set keeps pools alive across reloads so that idle
// connections and per-server state outlive a configuration change. The
// tradeoff is one mutex around the balancer per pick (a few nanoseconds,
// like nginx's peer lock) in exchange for exact smooth weighted sequences.
package upstream
