package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
	"golang.org/x/net/websocket"
)

// reloadRoutes is version v of the route file of the reload-under-load
// test: v shows in a respond route's body and in a response header of the
// proxied API route, so a version is seen live by its answer.
func reloadRoutes(v int, api, web, ws string) string {
	return fmt.Sprintf(`upstream api { server %s }
upstream web { server %s }
upstream ws { server %s }
route version {
  match Path(`+"`/__version`"+`)
  respond 200 "v%d"
}
route api {
  match PathPrefix(`+"`/api/`"+`)
  set_response_header X-Version v%d
  to api
}
route ws {
  match PathPrefix(`+"`/ws`"+`)
  to ws
}
route web {
  match PathPrefix(`+"`/`"+`)
  to web
}
`, api, web, ws, v, v)
}

// brokenRoutes are the invalid versions: each appends a different syntax
// error to a valid file, so a reload of it must be refused whole.
var brokenRoutes = []string{
	"route broken {\n  match PathPrefix(`/b`)\n  to web\n",             // "{" never closed
	"route broken {\n  match PathPrefix(`/b`) &&\n  to web\n}\n",       // operator without an operand
	"route broken {\n  match PathPrefix(`/b`)\n  to web\n}\n}\n",       // "}" with no block open
	"route broken {\n  match PathPrefix(\"/b)\n  to web\n}\n",          // unterminated string
	"route broken {\n  match PathPrefix(`/b`)\n  to web\n  bogus 1\n}", // unknown directive
}

// TestReloadUnderLoad rewrites the route file 100 times (80 valid versions,
// 20 broken ones) while keep-alive clients, new-connection clients and 50
// WebSockets use edgeway, and checks that no request fails, no WebSocket is
// cut, no keep-alive connection is closed, and every valid version is live
// within 1 s of its write. Reloads are triggered by the file watcher, as
// an operator's edit or a deploy would.
func TestReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 20 s")
	}
	const writes, pace = 100, 150 * time.Millisecond
	api, web := backend(t, "api"), backend(t, "web")
	echo := httptest.NewServer(websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	t.Cleanup(echo.Close)
	routes := func(v int) string { return reloadRoutes(v, hostPort(api), hostPort(web), hostPort(echo)) }

	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"edgeway.conf":    "log { access off }\nlisten web { addr 127.0.0.1:0 }\ninclude \"routes/*.routes\"\n",
		"routes/r.routes": routes(0),
	})
	p := testutil.Start(t, filepath.Join(dir, "edgeway.conf"))
	base := "http://" + p.Addrs(t, 1)["web"]
	poll := &http.Client{Timeout: 5 * time.Second}
	waitBody(t, poll, base+"/__version", "v0", 10*time.Second)

	ctx, stop := context.WithCancel(context.Background())
	tr := &traffic{}
	defer func() { stop(); tr.wg.Wait() }()
	if err := tr.webSockets(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws/echo", base, 50); err != nil {
		t.Fatal(err)
	}
	tr.httpClients(ctx, base, 4, true, "/api/users", "/", "/api/orders?x=1")
	tr.httpClients(ctx, base, 2, false, "/api/items", "/static/app.js")

	file := filepath.Join(dir, "routes", "r.routes")
	var live []time.Duration
	valid, broken := 0, 0
	for i := 1; i <= writes; i++ {
		start := time.Now()
		if i%5 == 0 { // 20 broken versions, spread over the run
			refused := strings.Count(p.Log(), "reload refused")
			replaceFile(t, file, []byte(routes(valid)+brokenRoutes[broken%len(brokenRoutes)]))
			broken++
			testutil.WaitFor(t, fmt.Sprintf("broken version %d refused", broken), func() bool {
				return strings.Count(p.Log(), "reload refused") > refused
			})
		} else {
			valid++
			replaceFile(t, file, []byte(routes(valid)))
			live = append(live, waitBody(t, poll, base+"/__version", fmt.Sprintf("v%d", valid), time.Second))
		}
		time.Sleep(time.Until(start.Add(pace))) // pacing of the writes
	}
	if got := getBody(poll, base+"/__version"); got != fmt.Sprintf("v%d", valid) {
		t.Errorf("after the last write /__version answers %q, want v%d", got, valid)
	}
	stop()
	tr.wg.Wait()

	p50, p99, top := percentiles(live)
	t.Logf("reloads: %d valid, %d refused; requests %d, failed %d; websockets 50, messages %d, cut %d; keep-alive dials %d for 4 clients, %d closed by edgeway",
		valid, broken, tr.requests.Load(), tr.failed.Load(), tr.messages.Load(), tr.cut.Load(), tr.dials.Load(), tr.serverClosed.Load())
	t.Logf("write to live (file watcher): p50 %v, p99 %v, max %v", p50, p99, top)
	l50, l99, lmax := percentiles(tr.latencies)
	t.Logf("request latency during the reloads: p50 %v, p99 %v, max %v", l50, l99, lmax)
	if tr.failed.Load() != 0 || tr.cut.Load() != 0 {
		t.Errorf("%d requests failed, %d websockets cut; first failures:\n%s", tr.failed.Load(), tr.cut.Load(), strings.Join(tr.errors, "\n"))
	}
	if n := tr.serverClosed.Load(); n != 0 || tr.dials.Load() < 4 {
		t.Errorf("edgeway closed %d of the keep-alive clients' %d connections: a reload closed some", n, tr.dials.Load())
	}
	if tr.requests.Load() < 1000 || tr.messages.Load() < 1000 {
		t.Errorf("too little traffic to prove anything: %d requests, %d websocket messages", tr.requests.Load(), tr.messages.Load())
	}
}
