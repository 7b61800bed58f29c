package rule

import (
	"testing"
	"unsafe"
)

func TestCache(t *testing.T) {
	t.Parallel()
	var c Cache
	text := "Host(`a.example`) && PathRegexp(`^/v[0-9]+/`)"
	r1, err := c.Parse(HTTP, text)
	if err != nil {
		t.Fatal(err)
	}
	if r2, _ := c.Parse(HTTP, text); r2 != r1 {
		t.Error("the same text parsed twice gave two rules")
	}
	if unsafe.StringData(r1.Text()) == unsafe.StringData(text) {
		t.Error("the cached rule keeps the caller's string (a slice of a whole file)")
	}
	if _, err := c.Parse(TCP, text); err == nil {
		t.Error("an HTTP rule was accepted as TCP: the cache must key on the kind")
	}
	if _, err := c.Parse(HTTP, "Host(`a`"); err == nil || c.Len() != 1 {
		t.Errorf("a bad rule: err %v, cache holds %d rules, want 1", err, c.Len())
	}
	other, _ := c.Parse(HTTP, "PathRegexp(`^/v[0-9]+/`)")
	if other.tree.leaf.http == nil || c.Len() != 2 {
		t.Fatalf("second rule not cached: %d", c.Len())
	}

	c.Sweep() // generation 0 ends: both used in it
	if r, _ := c.Parse(HTTP, text); r != r1 {
		t.Error("a rule used in the last generation was dropped")
	}
	c.Sweep() // generation 1 ends: other unused in it, used in the one before
	if c.Len() != 2 {
		t.Errorf("after a generation without it, a rule is kept for one more: have %d rules, want 2", c.Len())
	}
	c.Sweep() // generation 2 ends: other unused for two generations
	if c.Len() != 1 {
		t.Errorf("after two generations unused a rule is dropped: have %d rules, want 1", c.Len())
	}
	c.Sweep()
	c.Sweep()
	if c.Len() != 0 || len(c.res) != 0 {
		t.Errorf("cache not emptied: %d rules, %d regexps", c.Len(), len(c.res))
	}
}

func TestCacheMatchesLikeParse(t *testing.T) {
	t.Parallel()
	var c Cache
	for _, text := range []string{
		"HostRegexp(`^[a-z]+\\.example\\.com$`)",
		"Host(`x.example`) && HostRegexp(`^[a-z]+\\.example\\.com$`)",
		"HeaderRegexp(`X-T`, `^t[0-9]+$`) || PathRegexp(`^/a`)",
	} {
		cached, err := c.Parse(HTTP, text)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := Parse(HTTP, text)
		for _, req := range []HTTPRequest{
			{Host: "abc.example.com", Path: "/", Header: hdr{}},
			{Host: "x.example", Path: "/a/b", Header: hdr{"X-T": {"t12"}}},
			{Host: "1.example.com", Path: "/b", Header: hdr{"X-T": {"u"}}},
		} {
			if cached.MatchHTTP(&req) != plain.MatchHTTP(&req) {
				t.Errorf("%s on %+v: cached and plain rules disagree", text, req)
			}
		}
	}
}
