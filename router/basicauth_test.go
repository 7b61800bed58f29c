package router

import (
	"net/http"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/edgeway/edgeway/conf"
)

// TestBasicAuth: a route with basic_auth answers 401 with its challenge
// until a known user's password comes; the upstream then gets the user in
// X-Remote-User and never the password, nor a client's own X-Remote-User.
func TestBasicAuth(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	r := testRoute(t, "admin", "PathPrefix(`/`)", "u")
	r.BasicAuth = &conf.BasicAuth{Realm: "ops", Users: map[string]string{"alice": string(hash)}}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{r},
	}
	_, fe := front(t, cfg, Options{})
	req := func(user, pass string, fields ...string) *http.Response {
		q := newReq(t, "GET", fe.URL+"/x", fields...)
		if user != "" {
			q.SetBasicAuth(user, pass)
		}
		resp, _ := do(t, nil, q)
		return resp
	}
	for _, c := range []struct{ desc, user, pass string }{{"no credentials", "", ""}, {"wrong password", "alice", "guess"}, {"unknown user", "bob", "s3cret"}} {
		resp := req(c.user, c.pass)
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Basic realm="ops", charset="UTF-8"` || resp.Header.Get("X-Upstream") != "" {
			t.Errorf("%s: %d %q, upstream %q", c.desc, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("X-Upstream"))
		}
	}
	for i := range 2 { // the second is the remembered check
		resp := req("alice", "s3cret", "X-Remote-User", "root")
		if resp.StatusCode != 200 || resp.Header.Get("X-Got-X-Remote-User") != "alice" || resp.Header.Get("X-Got-Authorization") != "" {
			t.Errorf("try %d: %d, upstream saw user %q, authorization %q", i, resp.StatusCode, resp.Header.Get("X-Got-X-Remote-User"), resp.Header.Get("X-Got-Authorization"))
		}
	}
	if resp := req("alice", "s3cretX"); resp.StatusCode != 401 {
		t.Errorf("a wrong password after a right one: %d", resp.StatusCode)
	}
}
