package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestTunnelsSeen: a WebSocket tunnel gets an access-log line when it
// ends (who closed it, bytes each way, its duration, the request ID) and
// counts in the tunnel metrics; one a reload orphans ends as "drained".
func TestTunnelsSeen(t *testing.T) {
	up := httptest.NewServer(websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	t.Cleanup(up.Close)
	routes := fmt.Sprintf("upstream u { server %s }\nroute r {\n  match PathPrefix(`/`)\n  to u\n}\n", hostPort(up))
	e := startAdmin(t, "tunnel_drain 10ms\nlog { access on; format text; output stderr }\n", map[string]string{"r.routes": routes})
	echo := func(ws *websocket.Conn, msg string) {
		t.Helper()
		ws.SetDeadline(time.Now().Add(10 * time.Second))
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatal(err)
		}
		var got string
		for len(got) < len(msg) {
			var part string
			if err := websocket.Message.Receive(ws, &part); err != nil {
				t.Fatalf("echo: %v", err)
			}
			got += part
		}
	}
	dial := func() *websocket.Conn {
		t.Helper()
		ws, err := websocket.Dial(strings.Replace(e.base, "http", "ws", 1)+"/echo", "", e.base)
		if err != nil {
			t.Fatalf("websocket dial through edgeway: %v", err)
		}
		return ws
	}

	ws := dial()
	echo(ws, strings.Repeat("x", 1000))
	ws.Close()
	server := hostPort(up)
	e.p.WaitLog(t, `msg=tunnel log=access listener=web kind=websocket client=127\.0\.0\.1:\d+ route=r upstream=u server=`+server+
		` bytes_to_server=\d{4,} bytes_to_client=\d{4,} duration=[0-9.e-]+ end=(client|server)_closed request_id=[0-9a-f]{32}\n`)
	// The client's close frame makes the server close too: either FIN may
	// reach edgeway first on a busy machine.
	testutil.WaitFor(t, "one websocket tunnel counted", func() bool {
		return e.metricSum(t, "edgeway_tunnels_total", `kind="websocket"`, `route="r"`) == 1
	})
	for _, dir := range []string{"client_to_server", "server_to_client"} {
		s := `edgeway_tunnel_bytes_total{direction="` + dir + `",listener="web",route="r"}`
		if v, _ := strconv.ParseFloat(e.metric(t, s), 64); v < 1000 {
			t.Errorf("%s = %v, want at least the 1000 bytes echoed", s, v)
		}
	}
	if v := e.metric(t, `edgeway_tunnel_duration_seconds_count{kind="websocket",listener="web"}`); v != "1" {
		t.Errorf("tunnel duration count = %q, want 1", v)
	}

	// A reload that removes the route ends the open tunnel, and the line
	// says so.
	ws = dial()
	echo(ws, "hello")
	file := filepath.Join(e.dir, "routes", "r.routes")
	os.WriteFile(file, []byte(strings.Replace(routes, "route r ", "route r2 ", 1)), 0o644)
	e.p.Cmd.Process.Signal(syscall.SIGHUP)
	e.p.WaitLog(t, `msg=tunnel log=access listener=web kind=websocket .* route=r .* end=drained `)
	ws.SetDeadline(time.Now().Add(10 * time.Second))
	var rest string
	if err := websocket.Message.Receive(ws, &rest); err == nil {
		t.Errorf("the drained tunnel still delivers: %q", rest)
	}
	ws.Close()
	// It ended after its route left, so it counts; the next reload drops
	// the series of the route that is gone.
	drained := `edgeway_tunnels_total{end="drained",kind="websocket",listener="web",route="r"}`
	testutil.WaitFor(t, drained, func() bool { return e.metric(t, drained) == "1" })
	os.WriteFile(file, []byte("# again\n"+strings.Replace(routes, "route r ", "route r2 ", 1)), 0o644)
	e.p.Cmd.Process.Signal(syscall.SIGHUP)
	testutil.WaitFor(t, "route r's tunnel series gone", func() bool {
		return e.metricSum(t, "edgeway_tunnels_total", `route="r"`) == 0 && e.metricSum(t, "edgeway_tunnel_bytes_total", `route="r"`) == 0
	})
}

// TestTLSAccessLines: a passed-through TLS connection gets an access-log
// line at its end with the SNI name, route, server and bytes; a request
// on a terminated connection, over HTTP/1.1 and HTTP/2, names its TLS
// version and SNI.
func TestTLSAccessLines(t *testing.T) {
	s := startTLSSite(t, "")
	port := s.addr[strings.LastIndex(s.addr, ":")+1:]
	for _, h2 := range []bool{false, true} {
		res, _ := get(t, s.client(h2), "https://a.test:"+port+"/tls-line")
		proto := "HTTP/1.1"
		if h2 {
			proto = "HTTP/2"
		}
		if res.StatusCode != 200 || res.Proto != strings.Replace(proto, "HTTP/2", "HTTP/2.0", 1) {
			t.Fatalf("GET over %s: %d %s", proto, res.StatusCode, res.Proto)
		}
		s.p.WaitLog(t, `msg=request log=access listener=websecure protocol=`+proto+` .* path=/tls-line .* upstream_connect=[0-9.e-]+ upstream_header=[0-9.e-]+ tls_version=TLSv1\.3 sni=a\.test\n`)
	}
	c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: s.roots, ServerName: "pass.test"})
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: pass.test\r\nConnection: close\r\n\r\n")
	body, err := io.ReadAll(c)
	c.Close()
	if err != nil || !strings.Contains(string(body), "passthrough proto=HTTP/1.1") {
		t.Fatalf("passthrough answer %q, %v", body, err)
	}
	// The server's close_notify makes the client close too: either FIN
	// may reach edgeway first.
	s.p.WaitLog(t, `msg=tunnel log=access listener=websecure kind=passthrough client=127\.0\.0\.1:\d+ route=p upstream=pt server=127\.0\.0\.1:\d+`+
		` bytes_to_server=\d{3,} bytes_to_client=\d{3,} duration=[0-9.e-]+ end=(client|server)_closed sni=pass\.test\n`)
}
