package router

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// TestResetExchangeIsNew serves a request that sets as much of an
// exchange as a proxied request can (a retried try, a kept body, the
// forwarding headers), resets the exchange, and checks that what the next
// request finds is, field by field, what a new exchange holds.
func TestResetExchangeIsNew(t *testing.T) {
	good := backend(t, "good")
	u := testUpstream("u", []string{"127.0.0.1:1", addr(good)}) // the first refuses connections
	u.Balance = conf.Balance{Policy: conf.RoundRobin}
	u.Retry = conf.Retry{Attempts: 2, ConnectFailure: true, Budget: 100, MinConcurrent: 3, BodyBuffer: 1 << 10}
	cfg := &conf.Config{Listeners: []conf.Listener{testListener()}, Upstreams: []conf.Upstream{u},
		Routes: []conf.Route{streaming(testRoute(t, "all", "PathPrefix(`/`)", "u"))}} // the kept (retry) body
	rt := New(Options{})
	if err := rt.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	l := rt.Snapshot().http["web"]
	x := newExchange(rt)
	for i := range 2 { // round robin: one of the two requests tries the refusing server first
		req := httpmsg.Request{Method: "POST", Target: "/a/b?c=d", Host: "h.example", ProtoMajor: 1, ProtoMinor: 1,
			Header:        httpmsg.Header{{Name: "X-Forwarded-For", Value: "10.0.0.1"}, {Name: "Content-Type", Value: "text/plain"}},
			Body:          strings.NewReader("hello"),
			ContentLength: 5, RemoteAddr: netip.MustParseAddrPort("192.0.2.7:4000")}
		x.begin(discardProxyWriter{}, &req, l)
		x.serve()
		x.closeBody()
		x.end()
		if x.rt == nil || x.server == nil || len(x.tried) == 0 || x.kept == nil || len(x.outHdr) == 0 {
			t.Fatalf("request %d left too little state to test reset with: %+v", i, x.requestState)
		}
		x.reset()
	}
	got, want := x.requestState, newExchange(rt).requestState
	if got.bodyBuf == nil {
		t.Fatal("the kept body's buffer was not kept for the next request")
	}
	got.bodyBuf, want.bodyBuf = nil, nil // a buffer kept on purpose, emptied
	if !reflect.DeepEqual(got, want) {
		gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
		for i := range gv.NumField() {
			if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
				t.Errorf("after reset, %s = %#v; a new exchange has %#v", gv.Type().Field(i).Name, gv.Field(i), wv.Field(i))
			}
		}
	}
}
