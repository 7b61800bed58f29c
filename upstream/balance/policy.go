// Package balance holds the balancing algorithms of upstream pools, one per
// file. They see servers only through Servers, as indexes with a weight
// that is 0 when a server cannot be chosen now (unhealthy, ejected,
// drained, already tried by this request), so health, outlier ejection,
// breakers and retries exclude a server without the algorithm knowing why.
// They are not safe for concurrent use: the pool serialises them. None
// allocates per pick.
package balance

// Servers is what a policy sees of a pool at one pick.
type Servers interface {
	// Len is the number of servers; indexes run from 0 to Len()-1.
	Len() int
	// Weight is server i's effective weight at this pick; 0 means it
	// cannot be chosen.
	Weight(i int) int
	// MaxWeight bounds every Weight (for rejection sampling); 0 when no
	// server has weight.
	MaxWeight() int
	// Load is server i's requests in flight.
	Load(i int) int64
}

// Policy chooses a server. Next returns the index of a server with a
// positive weight, or -1 when there is none. key is the request's hash
// (policies that do not hash ignore it).
type Policy interface {
	Next(s Servers, key uint64) int
}

// Rand is a source of uniformly random 64-bit numbers, such as
// math/rand/v2.Uint64; tests inject a seeded one.
type Rand func() uint64

// Interface guards.
var (
	_ Policy = (*SWRR)(nil)
	_ Policy = (*Random)(nil)
	_ Policy = (*LeastRequest)(nil)
	_ Policy = (*Maglev)(nil)
)
