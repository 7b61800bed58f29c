package routes

import (
	"strings"
	"testing"
)

// FuzzSplitTo: whatever follows a route's `to`, parsing keeps its
// invariants, and takeTo keeps at least the pool and never more than
// the line holds, in pairs of a pool and a share (commas between them)
// when it keeps more than one. conf's FuzzSplitLoad checks the values.
func FuzzSplitTo(f *testing.F) {
	for _, s := range []string{"a", "a 90%, b 10%", "a 90% b 10%", "a 95% , b 5%", "a 90%,b 10%", "a 50% priority 3",
		"a 1.5%, b 98.5%,", "a b c", "a 10% b", "%", "a ,", "a 90%, listeners x", "a 100%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		checkInvariants(t, []byte("route r {\n  match Path(`/`)\n  to "+args+"\n}\n"), RouteFile)
		var as []Arg
		for _, w := range strings.Fields(args) {
			as = append(as, Arg{Kind: Word, Value: w})
		}
		if len(as) == 0 {
			return
		}
		n := takeTo(as)
		if n < 1 || n > len(as) {
			t.Fatalf("%q: takeTo kept %d of %d", args, n, len(as))
		}
		for rest := as[:n]; n > 1 && len(rest) > 0; {
			if rest[0].Value == "," {
				rest = rest[1:]
				continue
			}
			if len(rest) < 2 || !IsShare(rest[1].Value) {
				t.Fatalf("%q: takeTo kept %v, not pools with shares", args, as[:n])
			}
			rest = rest[2:]
		}
	})
}
