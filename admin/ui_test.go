package admin

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send sends method url with headers (and body, a form when it has '=').
func send(t *testing.T, method, u, body string, header map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// login posts the token and returns the session cookie ("name=value").
func login(t *testing.T, base, token string) reply {
	t.Helper()
	return send(t, "POST", base+"/ui/login", url.Values{"token": {token}}.Encode(), nil)
}

func sessionCookieOf(t *testing.T, r reply) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", sessionCookie, r.header)
	return nil
}

func TestUILogin(t *testing.T) {
	_, base := startServer(t, allOptions(&fakeState{}))

	r := send(t, "GET", base+"/ui/", "", nil)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/login" {
		t.Fatalf("GET /ui/ without a session: %d %q, want 303 to /ui/login", r.status, r.header.Get("Location"))
	}
	page := send(t, "GET", base+"/ui/login", "", nil)
	if page.status != 200 || !strings.Contains(page.body, `<form id="login" method="post" action="/ui/login">`) {
		t.Fatalf("login page: %d %q", page.status, page.body)
	}
	for k, want := range map[string]string{
		"Content-Security-Policy": uiCSP, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
	} {
		if got := page.header.Get(k); got != want {
			t.Errorf("login page %s: %q, want %q", k, got, want)
		}
	}
	if csp := page.header.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}

	bad := login(t, base, "wrong")
	if bad.status != http.StatusSeeOther || bad.header.Get("Location") != "/ui/login?failed=1" || bad.header.Get("Set-Cookie") != "" {
		t.Fatalf("wrong token: %d %q %q", bad.status, bad.header.Get("Location"), bad.header.Get("Set-Cookie"))
	}

	ok := login(t, base, testToken)
	if ok.status != http.StatusSeeOther || ok.header.Get("Location") != "/ui/" {
		t.Fatalf("right token: %d %q", ok.status, ok.header.Get("Location"))
	}
	c := sessionCookieOf(t, ok)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || c.MaxAge != int(sessionTTL.Seconds()) {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path=/, Max-Age 12h", c)
	}
	if strings.Contains(c.Value, testToken) || len(c.Value) < 40 {
		t.Errorf("cookie value %q: want a random id, not the token", c.Value)
	}
	cookie := map[string]string{"Cookie": c.Name + "=" + c.Value}
	if r := send(t, "GET", base+"/ui/", "", cookie); r.status != 200 || !strings.Contains(r.body, `src="/ui/assets/app.js"`) {
		t.Fatalf("GET /ui/ with the session: %d %q", r.status, r.body)
	}
	if r := send(t, "GET", base+"/api/routes", "", cookie); r.status != 200 {
		t.Fatalf("GET /api/routes with the session: %d %q", r.status, r.body)
	}
	if r := send(t, "GET", base+"/api/routes", "", map[string]string{"Cookie": sessionCookie + "=forged"}); r.status != http.StatusUnauthorized {
		t.Fatalf("GET /api/routes with a forged session: %d, want 401", r.status)
	}
}

func TestUICSRF(t *testing.T) {
	_, base := startServer(t, allOptions(&fakeState{}))
	c := sessionCookieOf(t, login(t, base, testToken))
	cookie := c.Name + "=" + c.Value
	var info sessionInfo
	send(t, "GET", base+"/ui/session", "", map[string]string{"Cookie": cookie}).decode(t, &info)
	if len(info.CSRFToken) < 40 || info.CSRFToken == c.Value {
		t.Fatalf("session info %+v", info)
	}
	if r := send(t, "GET", base+"/ui/session", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("GET /ui/session without a session: %d, want 401", r.status)
	}
	for _, tc := range []struct {
		desc   string
		header map[string]string
		want   int
	}{
		{desc: "no CSRF token", header: map[string]string{"Cookie": cookie}, want: http.StatusForbidden},
		{desc: "wrong CSRF token", header: map[string]string{"Cookie": cookie, csrfHeader: "x" + info.CSRFToken}, want: http.StatusForbidden},
		{desc: "CSRF token without a session", header: map[string]string{csrfHeader: info.CSRFToken}, want: http.StatusUnauthorized},
		{desc: "cross-site", header: map[string]string{"Cookie": cookie, csrfHeader: info.CSRFToken, "Sec-Fetch-Site": "cross-site"}, want: http.StatusForbidden},
		{desc: "other origin", header: map[string]string{"Cookie": cookie, csrfHeader: info.CSRFToken, "Origin": "http://evil.example"}, want: http.StatusForbidden},
		{desc: "session and CSRF token", header: map[string]string{"Cookie": cookie, csrfHeader: info.CSRFToken, "Sec-Fetch-Site": "same-origin"}, want: http.StatusOK},
		{desc: "bearer token alone, as before", header: map[string]string{"Authorization": "Bearer " + testToken}, want: http.StatusOK},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if r := send(t, "POST", base+"/api/reload", "", tc.header); r.status != tc.want {
				t.Errorf("POST /api/reload: %d %q, want %d", r.status, r.body, tc.want)
			}
		})
	}
	if r := send(t, "POST", base+"/ui/login", "token="+testToken, map[string]string{"Sec-Fetch-Site": "cross-site"}); r.status != http.StatusForbidden {
		t.Errorf("cross-site login: %d, want 403", r.status)
	}
	if r := send(t, "POST", base+"/ui/logout", "", map[string]string{"Cookie": cookie}); r.status != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %d, want 403", r.status)
	}
	if r := send(t, "POST", base+"/ui/logout", "", map[string]string{"Cookie": cookie, csrfHeader: info.CSRFToken}); r.status != http.StatusNoContent {
		t.Errorf("logout: %d, want 204", r.status)
	}
	if r := send(t, "GET", base+"/api/routes", "", map[string]string{"Cookie": cookie}); r.status != http.StatusUnauthorized {
		t.Errorf("GET /api/routes after logout: %d, want 401", r.status)
	}
}

func TestUIAssets(t *testing.T) {
	_, base := startServer(t, Options{})
	for name, ctype := range map[string]string{"app.js": "text/javascript", "app.css": "text/css", "login.js": "text/javascript"} {
		r := send(t, "GET", base+"/ui/assets/"+name, "", nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), ctype) || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %q %q", name, r.status, r.header.Get("Content-Type"), r.header.Get("X-Content-Type-Options"))
		}
	}
	if r := send(t, "GET", base+"/ui", "", nil); r.status != http.StatusMovedPermanently || r.header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want a redirect to /ui/", r.status, r.header.Get("Location"))
	}
	for _, path := range []string{"/ui/assets/nope.js", "/ui/assets/", "/ui/assets/index.html", "/ui/assets/login.html", "/ui/assets/../ui.go"} {
		if r := send(t, "GET", base+path, "", nil); r.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.status)
		}
	}
}

func TestSessionStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSessionStore()
		first, _ := st.create(time.Now())
		if _, ok := st.lookup(first, time.Now()); !ok {
			t.Fatal("new session not found")
		}
		time.Sleep(sessionTTL - time.Second) // virtual time
		if _, ok := st.lookup(first, time.Now()); !ok {
			t.Fatal("session ended before its TTL")
		}
		for range maxSessions + 10 {
			st.create(time.Now())
		}
		if n := st.len(); n != maxSessions {
			t.Fatalf("%d sessions held, want the bound %d", n, maxSessions)
		}
		if _, ok := st.lookup(first, time.Now()); ok {
			t.Fatal("the session ending first was not the one replaced")
		}
		time.Sleep(sessionTTL)
		if _, ok := st.lookup(first, time.Now()); ok {
			t.Fatal("session outlived its TTL")
		}
		st.create(time.Now())
		if n := st.len(); n != 1 {
			t.Fatalf("%d sessions after all expired and one login, want 1", n)
		}
	})
}
