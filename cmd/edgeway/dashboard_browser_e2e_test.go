package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/edgeway/edgeway/internal/testutil"
)

// The dashboard, driven in headless chromium against a real edgeway: it
// keeps its data from a browser without the token, logs in with it, shows
// the routes and upstreams, drains a server from the page (and the API
// sees it), shows a refused reload's error at file:line:col, and explains
// a request. Each page is saved as a screenshot.

func dashboardRoutes(a, b string) string {
	return fmt.Sprintf("upstream api {\n  server %s weight 3\n  server %s\n}\n"+
		"route api {\n  match Host(`api.test`) && PathPrefix(`/v1`)\n  to api\n}\n"+
		"route fallback {\n  match PathPrefix(`/`)\n  to api\n}\n", a, b)
}

func TestDashboardInBrowser(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	srvA, srvB := hostPort(a), hostPort(b)
	e := startAdmin(t, "", map[string]string{"r.routes": dashboardRoutes(srvA, srvB)})
	br := newBrowser(t, e.p.Log)

	// Without a session: the login form, and no data.
	br.do("the login page", chromedp.Navigate(e.admin+"/ui/"), chromedp.WaitVisible(css("#login")))
	if loc := mustEval[string](br, "location.pathname"); loc != "/ui/login" {
		t.Errorf("/ui/ without a session went to %s, want /ui/login", loc)
	}
	for _, path := range []string{"/api/routes", "/api/upstreams", "/api/config", "/api/overview", "/ui/session"} {
		if code := mustEval[int](br, "fetch("+jsString(path)+").then(r => r.status)"); code != http.StatusUnauthorized {
			t.Errorf("the page's fetch of %s before login: %d, want 401", path, code)
		}
	}
	br.do("a wrong token", chromedp.SendKeys(css("#token"), "wrong"), chromedp.Click(css("#login-submit")),
		chromedp.WaitVisible(css("#failed")))
	br.shot("1-login")

	// Log in: the overview.
	br.do("log in", chromedp.SendKeys(css("#token"), e2eToken),
		chromedp.Click(css("#login-submit")), chromedp.WaitVisible(css("#page-overview")),
		until(`document.querySelector('#ov-listeners tbody tr td')?.textContent === 'web'`),
		until(`document.querySelector('#ov-gen')?.textContent === 'gen 1'`))
	if href := mustEval[string](br, "location.href"); strings.Contains(href, e2eToken) {
		t.Errorf("the token is in the URL: %s", href)
	}
	if c := mustEval[string](br, "document.cookie"); c != "" {
		t.Errorf("the page's script can read cookies %q; want the session cookie HttpOnly", c)
	}
	// Traffic after the first reading shows as requests/s at a later
	// one, without reloading the page.
	for range 20 {
		if out, _ := testutil.Curl(t, e.base+"/"); !strings.HasPrefix(out, "a ") && !strings.HasPrefix(out, "b ") {
			t.Fatalf("GET / through edgeway: %q", out)
		}
	}
	br.do("requests/s", until(`Number(document.querySelector('#ov-rps')?.textContent) > 0`),
		until(`document.querySelector('#ov-err')?.textContent === '0.00%'`))
	var ov overview
	e.get(t, "/api/overview", &ov)
	if ov.RequestsTotal < 20 || ov.Responses5xxTotal != 0 || len(ov.Listeners) != 1 || ov.Listeners[0].Addr != strings.TrimPrefix(e.base, "http://") {
		t.Errorf("GET /api/overview after 20 requests: %+v", ov)
	}
	br.shot("2-overview")

	// The Content-Security-Policy holds: an inline script is refused.
	inline := `new Promise(resolve => {
		document.addEventListener('securitypolicyviolation', e => resolve(e.effectiveDirective), {once: true});
		const s = document.createElement('script');
		s.textContent = 'window.inlineRan = true';
		document.body.append(s);
	})`
	if d := mustEval[string](br, inline); d != "script-src-elem" {
		t.Errorf("inline script: violation of %q, want script-src-elem", d)
	}
	if mustEval[bool](br, "window.inlineRan === true") {
		t.Error("an inline script ran")
	}
	br.expect("Content Security Policy")

	// Routes, and the search.
	br.do("the routes", chromedp.Click(css(`nav a[href="#routes"]`)),
		until(`document.querySelectorAll('#routes-table tbody tr').length === 2`),
		until(`document.querySelector('#routes-table tr[data-route="api"] td.rule')?.textContent === "Host(`+"`api.test`"+`) && PathPrefix(`+"`/v1`"+`)"`))
	// Traffic after two readings shows in the route's row.
	statCell := func(route, stat string) string {
		return `document.querySelector('#routes-table tr[data-route="` + route + `"] td[data-stat="` + stat + `"]')?.textContent`
	}
	br.do("a first rate", until(statCell("fallback", "rps")+` === '0.0'`))
	for range 10 {
		testutil.Curl(t, e.base+"/x")
	}
	br.do("the route's stats", until(`Number(`+statCell("fallback", "rps")+`) > 0`),
		until(statCell("fallback", "p50")+`.endsWith(' ms')`), until(statCell("fallback", "err")+` === '0.0%'`))
	var stats routeStatsList
	e.get(t, "/api/routes/stats?route=fallback&route=api", &stats)
	if fb, api := stats.Routes["fallback"], stats.Routes["api"]; fb == nil || api == nil || fb.RequestsTotal < 30 ||
		fb.DurationCount != fb.RequestsTotal || len(fb.DurationBuckets) == 0 || api.RequestsTotal != 0 {
		t.Errorf("GET /api/routes/stats: %+v %+v", fb, api)
	}
	br.shotFull("3-routes")
	br.do("searching routes", chromedp.SendKeys(css("#routes-search"), "fallback"),
		until(`document.querySelectorAll('#routes-table tbody tr').length === 1 && document.querySelector('#routes-table tbody tr')?.dataset.route === 'fallback'`))

	// Upstreams: a cancelled drain changes nothing, a confirmed one drains.
	row := func(addr string) string { return `#ups-table tr[data-addr="` + addr + `"]` }
	state := func(addr string) string { return `document.querySelector('` + row(addr) + ` td.state')?.textContent` }
	br.do("the upstreams", chromedp.Click(css(`nav a[href="#upstreams"]`)),
		until(state(srvA)+` === 'healthy' && `+state(srvB)+` === 'healthy'`))
	br.do("a cancelled drain", chromedp.Click(css(row(srvB)+` button[data-action="drain"]`)),
		chromedp.WaitVisible(css("#confirm")), chromedp.Click(css("#confirm-cancel")), chromedp.WaitNotVisible(css("#confirm")))
	br.do("drain", chromedp.Click(css(row(srvA)+` button[data-action="drain"]`)), chromedp.WaitVisible(css("#confirm")),
		until(`document.querySelector('#confirm-text')?.textContent.includes(`+jsString(srvA)+`)`))
	br.shot("4-confirm-drain")
	br.do("drained in the page", chromedp.Click(css("#confirm-ok")),
		until(state(srvA)+` === 'draining'`),
		until(`document.querySelector('`+row(srvA)+` td .chip')?.textContent === 'drain'`))
	br.shot("5-upstreams")
	var ups struct {
		Upstreams []struct {
			Servers []struct {
				Address, State string
				Override       *overrideView
			}
		}
	}
	e.get(t, "/api/upstreams", &ups)
	for _, s := range ups.Upstreams[0].Servers {
		drained := s.Override != nil && s.Override.Drain != nil && *s.Override.Drain
		if want := s.Address == srvA; drained != want || (s.State == "draining") != want {
			t.Errorf("GET /api/upstreams: %s state %s override %+v; want only %s drained", s.Address, s.State, s.Override, srvA)
		}
	}
	e.p.WaitLog(t, `reason="admin: drain true"`)

	// A weight set in the dialog, then every override cleared.
	br.do("set a weight", chromedp.Click(css(row(srvB)+` button[data-action="weight"]`)), chromedp.WaitVisible(css("#confirm-weight")),
		chromedp.SetValue(css("#confirm-weight"), "7"), chromedp.Click(css("#confirm-ok")),
		until(`document.querySelector('`+row(srvB)+` td .chip')?.textContent === 'weight 7'`))
	var pool struct {
		Servers []struct {
			Address string
			Weight  int
			Eff     float64 `json:"effective_weight"`
		}
	}
	e.get(t, "/api/upstreams/api", &pool)
	if s := pool.Servers[1]; s.Address != srvB || s.Eff != 7 {
		t.Errorf("after setting weight 7 in the page: %+v", s)
	}
	br.do("clear the overrides", chromedp.Click(css(row(srvB)+` button[data-action="clear"]`)), chromedp.WaitVisible(css("#confirm")),
		chromedp.Click(css("#confirm-ok")), until(`document.querySelector('`+row(srvB)+` td .chip') === null`),
		until(`document.querySelector('`+row(srvB)+` button[data-action="clear"]') === null`))

	// A call that changes state needs the CSRF token besides the session.
	patch := `fetch('/api/upstreams/api/servers/` + srvB + `', {method: 'PATCH', body: '{"drain": true}'}).then(r => r.status)`
	if code := mustEval[int](br, patch); code != http.StatusForbidden {
		t.Errorf("PATCH from the page without the CSRF token: %d, want 403", code)
	}

	// Certificates: none on this cleartext listener.
	br.do("the certificates", chromedp.Click(css(`nav a[href="#certificates"]`)),
		until(`document.querySelector('#certs-table tbody')?.textContent.includes('No certificates')`))
	br.shot("6-certificates")

	// A broken route file, reloaded from the page: refused, with file:line:col.
	bad := filepath.Join(e.dir, "routes", "bad.routes")
	if err := os.WriteFile(bad, []byte("route bad {\n  match PathPrefix(`/x`)\n  to missing\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	br.do("reload from the page", chromedp.Click(css(`nav a[href="#config"]`)), chromedp.WaitVisible(css("#reload")),
		chromedp.Click(css("#reload")), chromedp.WaitVisible(css("#confirm")), chromedp.Click(css("#confirm-ok")),
		until(`document.querySelector('#toast')?.textContent.startsWith('reload refused')`),
		until(`document.querySelector('#reload-errors')?.textContent.includes(`+jsString(bad+":3:6")+`)`),
		until(`document.querySelector('#reload-errors')?.textContent.includes('unknown upstream "missing"')`),
		// The offending line itself, as the file has it.
		until(`document.querySelector('#reload-errors pre.source')?.textContent.includes('to missing')`))
	br.shot("7-config")
	if !strings.Contains(e.p.Log(), "trigger=api") {
		t.Errorf("no reload with trigger=api in the log:\n%s", e.p.Log())
	}

	// Explain a request: the route chosen.
	br.do("explain", chromedp.Click(css(`nav a[href="#explain"]`)),
		chromedp.SetValue(css("#ex-url"), e.base+"/v1/users"), chromedp.SetValue(css("#ex-headers"), "Host: api.test"),
		chromedp.SetValue(css("#ex-ip"), "203.0.113.7"), chromedp.Click(css("#ex-submit")),
		until(`document.querySelector('#ex-dl dd[data-field="Route"]')?.textContent === 'api'`),
		until(`document.querySelector('#ex-dl dd[data-field="Upstream"]')?.textContent === 'api'`))
	br.shot("8-explain")

	// Dark mode, then log out: the data is gone again.
	br.do("dark mode", colorScheme("dark"), chromedp.Click(css(`nav a[href="#upstreams"]`)),
		until(`getComputedStyle(document.body).backgroundColor === 'rgb(17, 20, 24)'`), until(state(srvA)+` === 'draining'`))
	br.shot("9-upstreams-dark")
	br.do("log out", colorScheme("light"), chromedp.Click(css("#logout")), chromedp.WaitVisible(css("#login")))
	if code := mustEval[int](br, "fetch('/api/routes').then(r => r.status)"); code != http.StatusUnauthorized {
		t.Errorf("fetch of /api/routes after logout: %d, want 401", code)
	}
	br.checkClean()
}
