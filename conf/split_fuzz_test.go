package conf

import (
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzSplitLoad: a route's `to` either loads as one pool, or as a split
// of two pools or more, each defined and named once, whose shares add up
// to exactly 100%; anything else is refused with an error at a line of
// the file.
func FuzzSplitLoad(f *testing.F) {
	for _, s := range []string{"a", "a 90%, b 10%", "a 90% b 10%", "a 95% , b 5%", "a 90%,b 10%", "a 50%, b 50% priority 3",
		"a 1.5%, b 98.5%,", "a b c", "a 10% b", "a 33.34% b 33.33% c 33.33%", "a 50% a 50%", "a 100%, b 0%", "a 90.001% b 9.999%", "a 1e2% b 0%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		if strings.ContainsAny(args, "\n;{}\"`#") {
			return
		}
		src := "listen web { addr :80 }\nupstream a { server 127.0.0.1:1 }\nupstream b { server 127.0.0.1:2 }\nupstream c { server 127.0.0.1:3 }\n" +
			"route r {\n  match Path(`/`)\n  to " + args + "\n}\n"
		cfg, err := LoadFS(fstest.MapFS{"main.conf": {Data: []byte(src)}}, "main.conf")
		if err != nil {
			if !strings.Contains(err.Error(), "main.conf:") {
				t.Fatalf("%q: error without a position: %v", args, err)
			}
			return
		}
		r := cfg.Routes[0]
		s := r.Split
		if s == nil {
			if r.Upstream == "" {
				t.Fatalf("%q: loaded with no pool", args)
			}
			return
		}
		sum, seen := 0, map[string]bool{}
		for _, p := range s.Pools {
			if seen[p.Upstream] || (p.Upstream != "a" && p.Upstream != "b" && p.Upstream != "c") || p.Share < 0 {
				t.Fatalf("%q: bad pool in %+v", args, s.Pools)
			}
			seen[p.Upstream] = true
			sum += p.Share
		}
		if len(s.Pools) < 2 || sum != ShareScale || r.Upstream != s.Pools[0].Upstream {
			t.Fatalf("%q: loaded split %+v (sum %d)", args, s.Pools, sum)
		}
	})
}
