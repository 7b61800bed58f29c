package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestDashboardScale measures the dashboard with 10,000 routes and 1,000
// servers (10 pools of 100): its page weight, the admin answers it loads,
// the time to first paint and to the routes table rendered on a fresh
// load, and the time to the upstreams table and to a search. It is a
// measurement, not a check, so it runs only when asked:
//
//	EDGEWAY_DASHBOARD_SCALE=1 go test -run TestDashboardScale -v ./cmd/edgeway
func TestDashboardScale(t *testing.T) {
	if os.Getenv("EDGEWAY_DASHBOARD_SCALE") == "" {
		t.Skip("a measurement: set EDGEWAY_DASHBOARD_SCALE=1 to run it")
	}
	var weight int
	for _, f := range []string{"index.html", "app.css", "app.js"} {
		b, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), "admin", "ui", f))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("page weight: %-10s %6d bytes", f, len(b))
		weight += len(b)
	}
	t.Logf("page weight: dashboard  %6d bytes (HTML+CSS+JS, uncompressed)", weight)

	servers := make([]string, 100)
	for i := range servers {
		servers[i] = fmt.Sprintf("127.0.0.1:%d", 20000+i)
	}
	const routes, pools = 10000, 10
	e := startAdmin(t, "", map[string]string{"big.routes": testutil.RouteFile(testutil.RouteFileSpec{Routes: routes, Pools: pools, Servers: servers})})
	for _, path := range []string{"/api/routes", "/api/upstreams", "/api/overview", "/api/config"} {
		start := time.Now()
		code, body := e.do(t, http.MethodGet, path, true)
		if code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		t.Logf("GET %-15s %8d bytes in %v", path, len(body), time.Since(start).Round(time.Millisecond))
	}

	br := newBrowser(t, e.p.Log)
	br.do("log in", chromedp.Navigate(e.admin+"/ui/login"), chromedp.SendKeys(css("#token"), e2eToken),
		chromedp.Click(css("#login-submit")), chromedp.WaitVisible(css("#page-overview")))

	// A fresh load straight onto the routes page.
	rendered := fmt.Sprintf(`Number(document.querySelector('#routes-table tbody')?.dataset.total) >= %d`, routes)
	br.do("the routes page", chromedp.Navigate(e.admin+"/ui/#routes"), until(rendered))
	renderedAt := mustEval[float64](br, "performance.now()")
	fcp := mustEval[float64](br, `(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime`)
	fp := mustEval[float64](br, `(performance.getEntriesByName('first-paint')[0] || {startTime: -1}).startTime`)
	t.Logf("fresh load of #routes: first paint %.0f ms, first contentful paint %.0f ms, routes table (%d routes, 50 shown) by %.0f ms (at most a frame late)",
		fp, fcp, routes, renderedAt)
	rows := mustEval[int](br, `document.querySelectorAll('#routes-table tbody tr').length`)
	nodes := mustEval[int](br, `document.getElementsByTagName('*').length`)
	t.Logf("routes page: %d rows in the DOM, %d elements in all", rows, nodes)
	br.shotFull("scale-routes")

	start := time.Now()
	br.do("search", chromedp.SendKeys(css("#routes-search"), "svc1999."),
		until(`document.querySelector('#routes-search').value === 'svc1999.' && Number(document.querySelector('#routes-table tbody').dataset.total) < 10`))
	t.Logf("search of %d routes, 8 keys typed, each filtering all: %v to the last result (%s rows)", routes,
		time.Since(start).Round(time.Millisecond), mustEval[string](br, `document.querySelector('#routes-table tbody').dataset.total`))

	start = time.Now()
	br.do("the upstreams page", chromedp.Click(css(`nav a[href="#upstreams"]`)),
		until(fmt.Sprintf(`Number(document.querySelector('#ups-table tbody')?.dataset.total) === %d`, pools*len(servers))))
	t.Logf("upstreams page, %d servers: table rendered in %v", pools*len(servers), time.Since(start).Round(time.Millisecond))
	br.shotFull("scale-upstreams")

	heap := mustEval[float64](br, `performance.memory ? performance.memory.usedJSHeapSize / 1048576 : -1`)
	t.Logf("JS heap after both pages: %.1f MiB", heap)
	if !strings.Contains(e.p.Log(), "dashboard login") {
		t.Error("no dashboard login line in the log")
	}
}
