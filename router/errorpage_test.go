package router

import (
	"regexp"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

// TestErrorPages: edgeway's own answers take the route's page, else the
// listener's, in the variant the Accept field prefers, with $status and
// $request_id filled in; an upstream's answers are never replaced.
func TestErrorPages(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	l := testListener()
	l.ErrorPages = []conf.ErrorPage{
		{Codes: []int{404, 502}, ContentType: "text/html; charset=utf-8", Body: "<h1>$status</h1><p>ID $request_id, $5 off</p>"},
		{Codes: []int{404}, ContentType: "application/json", Body: `{"status":$status,"id":"$request_id"}`},
	}
	down := testRoute(t, "down", "PathPrefix(`/down`)", "dead")
	down.ErrorPages = []conf.ErrorPage{{Codes: []int{502}, ContentType: "text/plain; charset=utf-8", Body: "down: $status\n"}}
	cfg := &conf.Config{
		Listeners: []conf.Listener{l},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(up)}), testUpstream("dead", []string{"127.0.0.1:1"})},
		Routes:    []conf.Route{down, testRoute(t, "up", "PathPrefix(`/up`)", "a")},
	}
	_, fe := front(t, cfg, Options{})
	for _, c := range []struct {
		desc, path, accept string
		status             int
		ctype, body        string // body: a regexp
	}{
		{"listener page, no Accept", "/nothing", "", 404, "text/html; charset=utf-8", `^<h1>404</h1><p>ID [0-9a-f]{32}, \$5 off</p>$`},
		{"JSON preferred", "/nothing", "application/json, text/html;q=0.5", 404, "application/json", `^\{"status":404,"id":"[0-9a-f]{32}"\}$`},
		{"HTML preferred", "/nothing", "text/html,application/xhtml+xml,*/*;q=0.8", 404, "text/html; charset=utf-8", `^<h1>404`},
		{"wildcard", "/nothing", "application/*", 404, "application/json", `^\{"status":404`},
		{"the route's page first", "/down", "", 502, "text/plain; charset=utf-8", "^down: 502\n$"},
		{"the upstream's answer stays", "/up", "", 200, "text/plain; charset=utf-8", "^a$"},
	} {
		r, body := do(t, nil, newReq(t, "GET", fe.URL+c.path, "Accept", c.accept))
		if r.StatusCode != c.status || r.Header.Get("Content-Type") != c.ctype || !regexp.MustCompile(c.body).MatchString(body) {
			t.Errorf("%s: %d %q %q, want %d %q matching %s", c.desc, r.StatusCode, r.Header.Get("Content-Type"), body, c.status, c.ctype, c.body)
		}
	}
}

func TestAcceptQ(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		accept, mt string
		want       float64
	}{
		{"", "text/html", 1},
		{"text/html", "application/json", 0},
		{"text/html;q=0.3, */*;q=0.9", "text/html", 0.3},
		{"text/html;q=0.3, */*;q=0.9", "application/json", 0.9},
		{"application/*;q=0.5", "application/json", 0.5},
		{"Application/JSON; charset=utf-8; q=0.7", "application/json", 0.7},
	} {
		if got := acceptQ(c.accept, c.mt); got != c.want {
			t.Errorf("acceptQ(%q, %q) = %v, want %v", c.accept, c.mt, got, c.want)
		}
	}
}
