// Package upstream selects backends and keeps connections to them. A Pool
// owns one conf.Upstream: its servers, a balancer and one keep-alive
// Transport (a purpose-built HTTP/1.1 client that runs each exchange on the
// caller's goroutine, without http.Transport's per-connection goroutines);
// a Set keeps pools alive across reloads so that idle connections and
// per-server state outlive a configuration change. The tradeoff is one
// mutex around the balancer per pick (a few nanoseconds, like nginx's peer
// lock) in exchange for exact smooth weighted sequences.
package upstream
