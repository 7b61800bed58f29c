package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	goproxy "github.com/pires/go-proxyproto"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestProxyProtocolClientAddress: behind a load balancer that speaks the
// PROXY protocol, the address in the header is the client everywhere:
// ClientIP rules, X-Forwarded-For and the access log. A peer outside the
// trusted networks is refused and logged.
func TestProxyProtocolClientAddress(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "xff=%s", r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(up.Close)
	p, _, _ := startEdgeway(t, `
listen lb { addr 127.0.0.1:0
  protocols http1
  proxy_protocol trusted 127.0.0.1/32 }
listen lbstrict { addr 127.0.0.1:0
  protocols http1
  proxy_protocol trusted 10.0.0.0/8 }
`, map[string]string{"p.routes": fmt.Sprintf(`
upstream u { server %s }
route office {
  match ClientIP(`+"`203.0.113.0/24`"+`)
  respond 200 "office"
}
route rest {
  match PathPrefix(`+"`/`"+`)
  to u
}
`, hostPort(up))})
	addrs := p.Addrs(t, 3)

	ask := func(addr string, src netip.AddrPort, version byte) string {
		c := testutil.DialRaw(t, addr)
		h := goproxy.HeaderProxyFromAddrs(version, net.TCPAddrFromAddrPort(src), net.TCPAddrFromAddrPort(netip.MustParseAddrPort("198.51.100.1:80")))
		h.WriteTo(c)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "closed"
		}
		return testutil.BodyOf(res)
	}
	if got := ask(addrs["lb"], netip.MustParseAddrPort("203.0.113.9:5555"), 1); got != "office" {
		t.Errorf("v1 from 203.0.113.9: %q, want the ClientIP route", got)
	}
	if got := ask(addrs["lb"], netip.MustParseAddrPort("192.0.2.44:6666"), 2); got != "xff=192.0.2.44" {
		t.Errorf("v2 from 192.0.2.44: %q, want X-Forwarded-For 192.0.2.44", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return strings.Contains(p.Log(), "192.0.2.44") },
		"the access log does not show the PROXY header's client:\n%s", p.Log())
	if got := ask(addrs["lbstrict"], netip.MustParseAddrPort("192.0.2.44:6666"), 2); got != "closed" {
		t.Errorf("a peer outside trusted got %q, want the connection closed", got)
	}
	p.WaitLog(t, `msg=refused log=access listener=lbstrict protocol=proxy client=127\.0\.0\.1:\d+ reason=proxy_untrusted_peer`)
}
