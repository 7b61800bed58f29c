package router

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/routes/rule"
)

func tcpConfig(t *testing.T, up string, routes ...string) *conf.Config {
	t.Helper()
	c := &conf.Config{
		Listeners:   []conf.Listener{testListener()},
		Upstreams:   []conf.Upstream{testUpstream("db", []string{up})},
		TunnelDrain: 100 * time.Millisecond,
	}
	for _, name := range routes {
		r, err := rule.Parse(rule.TCP, "HostSNI(`"+name+".test`)")
		if err != nil {
			t.Fatal(err)
		}
		c.TCPRoutes = append(c.TCPRoutes, conf.TCPRoute{Name: name, Rule: r, Priority: r.DefaultPriority(), Upstream: "db"})
	}
	return c
}

// TestDialTCP: a ClientHello's name picks the tcp route and a server of
// its pool; no match is ErrNoTCPRoute; a reload leaves a passed-through
// connection whose route stays and closes one whose route left after
// tunnel_drain.
func TestDialTCP(t *testing.T) {
	up := rawServer(t, func(c net.Conn) { defer c.Close(); io.Copy(c, c) })
	r := New(Options{})
	t.Cleanup(r.Close)
	if err := r.Apply(tcpConfig(t, up, "stays", "goes")); err != nil {
		t.Fatal(err)
	}
	name := testListener().Name
	dial := func(sni string) (*TCPConn, error) {
		h := rule.TCPHello{SNI: sni}
		return r.DialTCP(context.Background(), name, &h, netip.MustParseAddrPort("192.0.2.1:1000"), netip.MustParseAddrPort("127.0.0.1:443"))
	}
	if _, err := dial("other.test"); !errors.Is(err, ErrNoTCPRoute) {
		t.Fatalf("unmatched name: %v, want ErrNoTCPRoute", err)
	}
	echo := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "ping"); err != nil {
			return err
		}
		_, err := io.ReadFull(c, make([]byte, 4))
		return err
	}
	stays, err := dial("stays.test")
	if err != nil || stays.Route != "stays" || stays.Server != up {
		t.Fatalf("dial stays.test: %+v, %v", stays, err)
	}
	goes, err := dial("goes.test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stays.Close(); goes.Close() })
	if err := r.Apply(tcpConfig(t, up, "stays")); err != nil {
		t.Fatal(err)
	}
	goes.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := goes.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection of a removed tcp route: %v, want it closed after the drain limit", err)
	}
	if err := echo(stays); err != nil {
		t.Fatalf("connection of a tcp route that stayed: %v", err)
	}
}
