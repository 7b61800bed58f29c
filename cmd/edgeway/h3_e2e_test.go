package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/testutil"
)

// h3Answer is what a client sees of a response, for comparing protocols.
type h3Answer struct {
	status int
	body   string
	header map[string]string // selected response fields
}

// do sends one request with c (or, when tr is set, over HTTP/3) and
// returns what the client saw.
func h3Do(t *testing.T, c *http.Client, tr *http3.Transport, method, url, host, body string, fields ...string) h3Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rb)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	var res *http.Response
	if tr != nil {
		res, err = tr.RoundTrip(req)
	} else {
		res, err = c.Do(req)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	a := h3Answer{status: res.StatusCode, body: string(b), header: map[string]string{}}
	for _, f := range fields {
		a.header[f] = res.Header.Get(f)
	}
	return a
}

// tlsClient is an HTTP/1.1 (h2 false) or HTTP/2 client for a TLS
// listener with a self-signed or test-CA certificate.
func tlsClient(h2 bool, roots *tls.Config) *http.Client {
	tr := &http.Transport{TLSClientConfig: roots.Clone(), ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestH3ReadmeExample is issue 10's "done means": the shipped example,
// started as TestMakeRunExample starts it, gives the same answers over
// HTTP/3 (quic-go) as over HTTP/2, and its TCP responses advertise
// HTTP/3 with Alt-Svc.
func TestH3ReadmeExample(t *testing.T) {
	p, _, sec := startExample(t)
	if got := p.QUICAddrs(t, 1)["websecure"]; got != "127.0.0.1:"+sec {
		t.Fatalf("QUIC listener on %s, want the TLS port 127.0.0.1:%s over UDP", got, sec)
	}
	insecure := &tls.Config{InsecureSkipVerify: true} // the example's certificate is self-signed, made at start
	h2c := tlsClient(true, insecure)
	tr := &http3.Transport{TLSClientConfig: insecure}
	defer tr.Close()
	base := "https://localhost:" + sec
	for _, tc := range []struct {
		desc, method, path, host, want string
		status                         int
	}{
		{desc: "root", method: "GET", path: "/", want: "hello from the edgeway demo backend\n", status: 200},
		{desc: "api", method: "GET", path: "/api/users", want: "[{\"id\":1,\"name\":\"ada\"}]\n", status: 200},
		{desc: "health", method: "GET", path: "/healthz", want: "ok\n", status: 200},
		{desc: "api POST falls to default", method: "POST", path: "/api/users", status: 200, want: "hello from the edgeway demo backend\n"},
		{desc: "redirect", method: "GET", path: "/a/b", host: "old.example.com", status: 308},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			fields := []string{"Content-Type", "Location", "X-Demo-Backend"}
			over2 := h3Do(t, h2c, nil, tc.method, base+tc.path, tc.host, "", append(fields, "Alt-Svc")...)
			over3 := h3Do(t, nil, tr, tc.method, base+tc.path, tc.host, "", fields...)
			if over3.status != tc.status || (tc.want != "" && over3.body != tc.want) {
				t.Errorf("HTTP/3: %d %q, want %d %q", over3.status, over3.body, tc.status, tc.want)
			}
			if alt := over2.header["Alt-Svc"]; alt != `h3=":`+sec+`"; ma=86400` {
				t.Errorf("HTTP/2 Alt-Svc = %q, want h3=\":%s\"; ma=86400", alt, sec)
			}
			delete(over2.header, "Alt-Svc")
			if fmt.Sprint(over2) != fmt.Sprint(over3) {
				t.Errorf("answers differ:\nHTTP/2: %+v\nHTTP/3: %+v", over2, over3)
			}
		})
	}
}

// echoUpstream answers with what the proxy forwarded: the request line,
// the forwarding headers, a rule-set header and the body.
func echoUpstream(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Upstream-Proto", r.Proto)
		fmt.Fprintf(w, "%s %s host=%s xfp=%s xff=%s xfh=%s route=%s cl=%d body=%q",
			r.Method, r.URL.RequestURI(), r.Host, r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-For"),
			r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Route"), r.ContentLength, b)
	}))
	t.Cleanup(s.Close)
	return s
}

// h3Site starts edgeway with one TLS listener serving http1, h2 and h3
// in front of up, and returns the process, the TCP and the UDP address.
func h3Site(t *testing.T, up *httptest.Server, quicBlock string) (*testutil.Proc, string, string, string) {
	t.Helper()
	ca := testutil.NewCA(t, "h3 e2e CA")
	certDir := t.TempDir()
	cert, key := ca.IssueFiles(t, certDir, testutil.IssueOptions{}, "site.test")
	port := testutil.FreePort(t)
	mainExtra := fmt.Sprintf(`
tls { cert %s %s default }
listen websecure {
  addr 127.0.0.1:%d
  protocols tls http1 h2 h3
  %s
}
`, cert, key, port, quicBlock)
	routes := fmt.Sprintf(`
upstream echo { server %s }
route api {
  match PathPrefix(`+"`/api/`"+`)
  listeners websecure
  strip_prefix /api
  set_header X-Route api
  to echo
}
route teapot {
  match Path(`+"`/teapot`"+`)
  listeners websecure
  set_response_header X-Teapot yes
  respond 418 "short and stout\n"
}
route default {
  match PathPrefix(`+"`/`"+`)
  listeners websecure
  to echo
}
`, hostPort(up))
	p, _, dir := startEdgeway(t, mainExtra, map[string]string{"h3.routes": routes})
	addrs := p.Addrs(t, 2)
	return p, addrs["websecure"], p.QUICAddrs(t, 1)["websecure"], dir
}

// TestH3SameAnswersAsH1AndH2 runs one routing table over HTTP/1.1,
// HTTP/2 and HTTP/3 and compares what the client and the upstream see.
func TestH3SameAnswersAsH1AndH2(t *testing.T) {
	up := echoUpstream(t)
	_, tcpAddr, udpAddr, _ := h3Site(t, up, "")
	tc := &tls.Config{InsecureSkipVerify: true, ServerName: "site.test"}
	h1, h2 := tlsClient(false, tc), tlsClient(true, tc)
	tr := &http3.Transport{TLSClientConfig: tc}
	defer tr.Close()
	if tcpAddr != udpAddr {
		t.Fatalf("TCP %s and UDP %s differ", tcpAddr, udpAddr)
	}
	base := "https://" + tcpAddr
	fields := []string{"Content-Type", "X-Teapot", "X-Upstream-Proto", "Content-Length"}
	for _, c := range []struct{ desc, method, path, body string }{
		{desc: "default route", method: "GET", path: "/hello?x=1"},
		{desc: "prefix stripped, header set", method: "GET", path: "/api/users"},
		{desc: "POST body", method: "POST", path: "/api/items", body: "name=ada"},
		{desc: "large body", method: "PUT", path: "/upload", body: strings.Repeat("0123456789", 20000)},
		{desc: "respond route", method: "GET", path: "/teapot"},
		{desc: "HEAD", method: "HEAD", path: "/hello"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			a1 := h3Do(t, h1, nil, c.method, base+c.path, "site.test", c.body, fields...)
			a2 := h3Do(t, h2, nil, c.method, base+c.path, "site.test", c.body, fields...)
			a3 := h3Do(t, nil, tr, c.method, base+c.path, "site.test", c.body, fields...)
			if a1.status == 0 || (c.method == "GET" && a1.body == "") {
				t.Fatalf("HTTP/1.1 answer is empty: %+v", a1)
			}
			if !strings.Contains(a3.body, "xfp=https") && c.path != "/teapot" && c.method != "HEAD" {
				t.Errorf("HTTP/3: upstream saw no X-Forwarded-Proto https: %q", a3.body)
			}
			if fmt.Sprint(a1) != fmt.Sprint(a2) || fmt.Sprint(a2) != fmt.Sprint(a3) {
				t.Errorf("answers differ:\nHTTP/1.1: %.300v\nHTTP/2:   %.300v\nHTTP/3:   %.300v", a1, a2, a3)
			}
		})
	}
}

// TestH3GracefulShutdownAndReload: a request in flight over HTTP/3
// finishes across a reload and across SIGTERM; after the reload new
// requests see the new routes.
func TestH3GracefulShutdownAndReload(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan string, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- r.URL.Path
			<-release
		}
		fmt.Fprintf(w, "done %s", r.URL.Path)
	}))
	t.Cleanup(up.Close)
	p, _, udpAddr, dir := h3Site(t, up, "")
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: "site.test"}}
	defer tr.Close()
	base := "https://" + udpAddr

	slow := func() <-chan h3Answer {
		ch := make(chan h3Answer, 1)
		go func() {
			req, _ := http.NewRequest("GET", base+"/slow", nil)
			res, err := tr.RoundTrip(req)
			if err != nil {
				ch <- h3Answer{body: err.Error()}
				return
			}
			b, err := io.ReadAll(res.Body)
			if err != nil {
				b = []byte(err.Error())
			}
			ch <- h3Answer{status: res.StatusCode, body: string(b)}
		}()
		if got := <-arrived; got != "/slow" {
			t.Fatalf("upstream got %s", got)
		}
		return ch
	}

	// Reload with a request in flight. rel lets one /slow request finish.
	rel := func() { release <- struct{}{} }
	inFlight := slow()
	replaceFile(t, filepath.Join(dir, "routes", "extra.routes"), []byte("route moved {\n  match Path(`/moved`)\n  listeners websecure\n  priority 100\n  respond 200 \"new route\\n\"\n}\n"))
	p.Cmd.Process.Signal(syscall.SIGHUP)
	testutil.Eventually(t, 10*time.Second, func() bool {
		req, _ := http.NewRequest("GET", base+"/moved", nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(res.Body)
		return string(b) == "new route\n"
	}, "the reloaded route is not served over HTTP/3")
	rel()
	if a := <-inFlight; a.status != 200 || a.body != "done /slow" {
		t.Fatalf("request in flight across the reload: %+v", a)
	}

	// Shut down with a request in flight.
	inFlight = slow()
	p.Cmd.Process.Signal(syscall.SIGTERM)
	p.WaitLog(t, "shutting down")
	rel()
	if a := <-inFlight; a.status != 200 || a.body != "done /slow" {
		t.Fatalf("request in flight at shutdown: %+v", a)
	}
	if code := p.Wait(t, 15*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestH3Metrics: HTTP/3 connections, handshakes and requests show in
// /metrics (edgeway_quic_*), and HTTP/3 requests count with the others
// in edgeway_requests_total.
func TestH3Metrics(t *testing.T) {
	ca := testutil.NewCA(t, "h3 metrics CA")
	cert, key := ca.IssueFiles(t, t.TempDir(), testutil.IssueOptions{}, "site.test")
	port := testutil.FreePort(t)
	e := startAdmin(t, fmt.Sprintf(`
tls { cert %s %s default }
listen websecure {
  addr 127.0.0.1:%d
  protocols tls h2 h3
}
`, cert, key, port), map[string]string{"r.routes": "route hello {\n  match PathPrefix(`/`)\n  respond 200 \"hello\\n\"\n}\n"})
	udp := e.p.QUICAddrs(t, 1)["websecure"]
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, ServerName: "site.test"}}
	defer tr.Close()
	for range 3 {
		if a := h3Do(t, nil, tr, "GET", "https://"+udp+"/", "site.test", ""); a.status != 200 || a.body != "hello\n" {
			t.Fatalf("HTTP/3: %+v", a)
		}
	}
	for _, m := range []struct{ sample, want string }{
		{`edgeway_quic_open_connections{listener="websecure"}`, "1"},
		{`edgeway_quic_connections_total{listener="websecure",outcome="accepted"}`, "1"},
		{`edgeway_quic_connections_total{listener="websecure",outcome="retry"}`, "0"},
		{`edgeway_quic_handshakes_total{listener="websecure",result="ok"}`, "1"},
		{`edgeway_quic_requests_total{listener="websecure"}`, "3"},
		{`edgeway_quic_early_rejected_total{listener="websecure"}`, "0"},
	} {
		if got := e.metric(t, m.sample); got != m.want {
			t.Errorf("%s = %q, want %s", m.sample, got, m.want)
		}
	}
	_, body := e.do(t, http.MethodGet, "/metrics", true)
	if !regexp.MustCompile(`(?m)^edgeway_requests_total\{[^}]*listener="websecure"[^}]*\} 3$`).MatchString(body) {
		t.Errorf("no edgeway_requests_total of 3 for listener websecure in:\n%s", grepLines(body, "edgeway_requests_total"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestH3GetCommand: `edgeway h3get`, the README's way to try HTTP/3
// without an HTTP/3 curl, gets an answer over QUIC, head and body.
func TestH3GetCommand(t *testing.T) {
	up := echoUpstream(t)
	_, _, udpAddr, _ := h3Site(t, up, "")
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"h3get", "-k", "-i", "https://" + udpAddr + "/teapot"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 || !strings.HasPrefix(out, "HTTP/3.0 418 I'm a teapot\n") || !strings.Contains(out, "X-Teapot: yes\n") ||
		!strings.HasSuffix(out, "\n\nshort and stout\n") {
		t.Fatalf("h3get: exit %d, stdout %q, stderr %q", code, out, stderr.String())
	}
	if code := dispatch([]string{"h3get", "https://" + udpAddr + "/"}, &stdout, &stderr); code != 1 {
		t.Errorf("h3get without -k against a certificate of an unknown CA: exit %d, want 1", code)
	}
}

// TestH3RequestIDAndAccessLine: over HTTP/3 the client gets the
// X-Request-Id that the access-log line carries, with the protocol, the
// TLS version and the SNI name.
func TestH3RequestIDAndAccessLine(t *testing.T) {
	up := echoUpstream(t)
	p, _, udpAddr, _ := h3Site(t, up, "")
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: "site.test"}}
	defer tr.Close()
	a := h3Do(t, nil, tr, "GET", "https://"+udpAddr+"/id-line", "site.test", "", "X-Request-Id")
	id := a.header["X-Request-Id"]
	if a.status != 200 || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("HTTP/3 answer %d with X-Request-Id %q, want 200 and 32 hex digits", a.status, id)
	}
	p.WaitLog(t, `msg=request log=access listener=websecure protocol=HTTP/3 .* path=/id-line .* request_id=`+id+` .* tls_version=TLSv1\.3 sni=site\.test\n`)
}

// TestH3Policies: over HTTP/3 a route's deny list refuses with 403, its
// rate limit with 429 and Retry-After, and its error page is served, as
// over TCP.
func TestH3Policies(t *testing.T) {
	up := echoUpstream(t)
	ca := testutil.NewCA(t, "h3 policies CA")
	certDir := t.TempDir()
	cert, key := ca.IssueFiles(t, certDir, testutil.IssueOptions{}, "site.test")
	port := testutil.FreePort(t)
	mainExtra := fmt.Sprintf("tls { cert %s %s default }\nlisten websecure {\n  addr 127.0.0.1:%d\n  protocols tls http1 h2 h3\n}\n", cert, key, port)
	routes := fmt.Sprintf("upstream echo { server %s }\nlimit once { rate 1/h; burst 1; key route }\n"+
		"route denied {\n  match PathPrefix(`/denied`)\n  listeners websecure\n  deny 127.0.0.0/8\n  error_page 403 \"no: $status\"\n  to echo\n}\n"+
		"route limited {\n  match PathPrefix(`/limited`)\n  listeners websecure\n  limit once\n  to echo\n}\n", hostPort(up))
	p, _, _ := startEdgeway(t, mainExtra, map[string]string{"h3.routes": routes})
	udpAddr := p.QUICAddrs(t, 1)["websecure"]
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: "site.test"}}
	defer tr.Close()
	base := "https://" + udpAddr
	if a := h3Do(t, nil, tr, "GET", base+"/denied", "site.test", ""); a.status != 403 || a.body != "no: 403" {
		t.Errorf("denied over HTTP/3: %d %q, want 403 with the error page", a.status, a.body)
	}
	start := time.Now()
	if a := h3Do(t, nil, tr, "GET", base+"/limited", "site.test", ""); a.status != 200 {
		t.Errorf("first limited request: %d", a.status)
	}
	a := h3Do(t, nil, tr, "GET", base+"/limited", "site.test", "", "Retry-After")
	if err := testutil.RetryAfterWithin(a.header["Retry-After"], time.Hour, start); a.status != 429 || err != nil {
		t.Errorf("second limited request: %d, want 429: %v", a.status, err)
	}
}

// TestH3JWT: over HTTP/3 a jwt route whose key set comes from a URL
// refuses a request without a token (401 with the challenge) and lets a
// token of the served key through, its claim copied upstream.
func TestH3JWT(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Join(r.Header.Values("X-User"), ","))
	}))
	t.Cleanup(up.Close)
	key := testutil.NewJWTKey("k1")
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, testutil.JWKS(key))
	}))
	t.Cleanup(idp.Close)
	ca := testutil.NewCA(t, "h3 jwt CA")
	cert, pkey := ca.IssueFiles(t, t.TempDir(), testutil.IssueOptions{}, "site.test")
	mainExtra := fmt.Sprintf("tls { cert %s %s default }\nlisten websecure {\n  addr 127.0.0.1:%d\n  protocols tls http1 h2 h3\n}\n", cert, pkey, testutil.FreePort(t))
	routes := fmt.Sprintf("upstream echo { server %s }\nroute api {\n  match PathPrefix(`/`)\n  listeners websecure\n"+
		"  jwt { jwks %s/jwks.json; claim_header sub X-User }\n  to echo\n}\n", hostPort(up), idp.URL)
	p, _, _ := startEdgeway(t, mainExtra, map[string]string{"h3.routes": routes})
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: "site.test"}}
	defer tr.Close()
	url := "https://" + p.QUICAddrs(t, 1)["websecure"] + "/whoami"
	send := func(auth string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Host = "site.test"
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		req.Header.Set("X-User", "root")
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("WWW-Authenticate"), string(b)
	}
	if st, challenge, _ := send(""); st != 401 || challenge != "Bearer" {
		t.Errorf("no token over HTTP/3: %d, WWW-Authenticate %q; want 401 Bearer", st, challenge)
	}
	token := key.Sign(map[string]any{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	st, _, body := send("Bearer " + token)
	if st != 200 || body != "alice" {
		t.Errorf("a valid token over HTTP/3: %d, upstream saw %q; want 200 with X-User alice only", st, body)
	}
}
