package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
	"golang.org/x/net/websocket"
)

func TestRoutingOverHTTP1AndH2C(t *testing.T) {
	api, web := backend(t, "api"), backend(t, "web")
	routes := fmt.Sprintf(`
upstream api { server %s }
upstream web { server %s }
route api {
  match Host(`+"`api.test`"+`) && PathPrefix(`+"`/v1/`"+`)
  strip_prefix /v1
  set_header X-Route api
  to api
}
route web {
  match PathPrefix(`+"`/`"+`)
  remove_response_header X-Backend
  to web
}
`, hostPort(api), hostPort(web))
	_, base, _ := startEdgeway(t, "", map[string]string{"a.routes": routes})
	cases := []struct {
		desc, proto, host, path, want string
	}{
		{"h1 api", "--http1.1", "api.test", "/v1/users?x=1", "api GET /users?x=1"},
		{"h1 default", "--http1.1", "other.test", "/v1/users", "web GET /v1/users"},
		{"h2c api", "--http2-prior-knowledge", "api.test", "/v1/a", "api GET /a"},
		{"h2c default", "--http2-prior-knowledge", "x", "/", "web GET /"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			out, code := testutil.Curl(t, tc.proto, "-H", "Host: "+tc.host, base+tc.path)
			if code != 0 || out != tc.want {
				t.Fatalf("curl %s: exit %d, body %q; want %q", tc.path, code, out, tc.want)
			}
		})
	}
	t.Run("response header removed", func(t *testing.T) {
		out, _ := testutil.Curl(t, "-D", "-", "-o", "/dev/null", base+"/")
		if strings.Contains(strings.ToLower(out), "x-backend") {
			t.Fatalf("X-Backend not removed:\n%s", out)
		}
	})
	t.Run("h2c really is HTTP/2", func(t *testing.T) {
		out, _ := testutil.Curl(t, "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_version}", base+"/")
		if out != "2" {
			t.Fatalf("http_version %q, want 2", out)
		}
	})
}

func TestNotFoundAndAccessLog(t *testing.T) {
	p, base, _ := startEdgeway(t, "", map[string]string{"a.routes": "route only { match Path(`/only`)\n respond 200 \"yes\" }\n"})
	out, code := testutil.Curl(t, "-o", "/dev/null", "-w", "%{http_code}", base+"/nope")
	if code != 0 || out != "404" {
		t.Fatalf("got %q (exit %d), want 404", out, code)
	}
	out, _ = testutil.Curl(t, base+"/only")
	if out != "yes" {
		t.Fatalf("respond body %q", out)
	}
	p.WaitLog(t, `method=GET .*path=/only.*status=200`)
	p.WaitLog(t, `route=only`)
}

func TestLargeBodiesStreamBothWays(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			h := sha256.New()
			n, _ := io.Copy(h, r.Body)
			fmt.Fprintf(w, "%d %s", n, hex.EncodeToString(h.Sum(nil)))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		buf := make([]byte, 64<<10)
		for i := 0; i < 512; i++ { // 32 MiB, chunked
			w.Write(buf)
		}
	}))
	t.Cleanup(up.Close)
	_, base, _ := startEdgeway(t, "", map[string]string{"a.routes": fmt.Sprintf(
		"upstream u { server %s }\nroute r { match PathPrefix(`/`)\n to u }\n", hostPort(up))})

	file := filepath.Join(t.TempDir(), "big")
	data := make([]byte, 24<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := fmt.Sprintf("%d %s", len(data), hex.EncodeToString(sum[:]))
	for _, te := range []string{"", "Transfer-Encoding: chunked"} {
		args := []string{"--data-binary", "@" + file, base + "/up"}
		if te != "" {
			args = append([]string{"-H", te}, args...)
		}
		if out, code := testutil.Curl(t, args...); code != 0 || out != want {
			t.Fatalf("upload (%q): exit %d, got %q want %q", te, code, out, want)
		}
	}
	out, code := testutil.Curl(t, "-o", "/dev/null", "-w", "%{size_download}", base+"/down")
	if code != 0 || out != fmt.Sprint(32<<20) {
		t.Fatalf("download: exit %d, size %s", code, out)
	}
}

func TestWebSocketTunnel(t *testing.T) {
	up := httptest.NewServer(websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	t.Cleanup(up.Close)
	_, base, _ := startEdgeway(t, "", map[string]string{"a.routes": fmt.Sprintf(
		"upstream u { server %s }\nroute r { match PathPrefix(`/`)\n to u }\n", hostPort(up))})
	ws, err := websocket.Dial(strings.Replace(base, "http", "ws", 1)+"/echo", "", base)
	if err != nil {
		t.Fatalf("websocket dial through edgeway: %v", err)
	}
	defer ws.Close()
	for _, msg := range []string{"hello", strings.Repeat("x", 70000)} {
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatal(err)
		}
		// The echo server writes back what each read returns, so a long
		// message may come back in several frames.
		var got string
		ws.SetDeadline(time.Now().Add(10 * time.Second))
		for len(got) < len(msg) {
			var part string
			if err := websocket.Message.Receive(ws, &part); err != nil {
				t.Fatalf("echo: %v after %d bytes", err, len(got))
			}
			got += part
		}
		if got != msg {
			t.Fatalf("echo: got %d bytes that differ from the %d sent", len(got), len(msg))
		}
	}
}

func TestUpstreamFailures(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall-body" {
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	dead := testutil.FreePort(t)
	routes := fmt.Sprintf(`
upstream slow { server %s
  response_timeout 300ms
  idle_timeout 500ms }
upstream dead { server 127.0.0.1:%d }
route slow { match PathPrefix(`+"`/slow`"+`) || PathPrefix(`+"`/stall-body`"+`)
  to slow }
route dead { match PathPrefix(`+"`/dead`"+`)
  to dead }
`, hostPort(slow), dead)
	p, base, _ := startEdgeway(t, "", map[string]string{"a.routes": routes})
	for _, tc := range []struct{ path, want string }{{"/slow", "504"}, {"/dead", "502"}} {
		out, _ := testutil.Curl(t, "-o", "/dev/null", "-w", "%{http_code}", base+tc.path)
		if out != tc.want {
			t.Fatalf("%s: status %s, want %s", tc.path, out, tc.want)
		}
	}
	body, _ := testutil.Curl(t, base+"/dead")
	if strings.Contains(body, "127.0.0.1") || strings.Contains(body, "refused") {
		t.Fatalf("error body reveals internals: %q", body)
	}
	p.WaitLog(t, `(?i)refused`)
	// A body that stalls after the headers is cut at the idle timeout:
	// curl gets the first bytes and then a transfer error, not a hang.
	start := time.Now()
	out, code := testutil.Curl(t, base+"/stall-body")
	if code == 0 || out != "partial" || time.Since(start) > 10*time.Second {
		t.Fatalf("stalled body: exit %d, body %q after %v", code, out, time.Since(start))
	}
}

func TestReadHeaderTimeoutCutsSlowClient(t *testing.T) {
	_, base, _ := startEdgeway(t, "", map[string]string{"a.routes": "route r { match PathPrefix(`/`)\n respond 200 \"ok\" }\n"})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: a\r\n") // never finished
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(c)
	if err != nil {
		t.Fatalf("connection not closed by edgeway: %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("closed after %v; read_header_timeout is 2s", d)
	}
}

func TestSmugglingRefusedOverTheWire(t *testing.T) {
	_, base, _ := startEdgeway(t, "", map[string]string{"a.routes": "route r { match PathPrefix(`/`)\n respond 200 \"ok\" }\n"})
	req := "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, req)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	rest, _ := io.ReadAll(resp.Body)
	more, _ := io.ReadAll(c)
	if len(more) != 0 {
		t.Fatalf("connection kept serving after a smuggling attempt: %q %q", rest, more)
	}
}

// TestBrokenChunkedBodyIsTheClients checks that a request whose chunked
// body is broken from its first bytes (here a chunk extension longer than
// the 16 KiB limit) is answered 400 and never reaches the upstream.
func TestBrokenChunkedBodyIsTheClients(t *testing.T) {
	var reached atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	t.Cleanup(up.Close)
	_, base, _ := startEdgeway(t, "", map[string]string{"a.routes": "upstream u { server " + hostPort(up) + " }\n" +
		"route r { match PathPrefix(`/`)\n to u }\n"})
	for _, body := range []string{"5;" + strings.Repeat("x", 20<<10) + "\r\nhello\r\n0\r\n\r\n", "zz\r\nhello\r\n0\r\n\r\n"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"+body)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the upstream saw %d requests, want none", n)
	}
}

func TestValidateReportsEveryMistake(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"edgeway.conf": "listen web { addr 127.0.0.1:0 }\ninclude \"routes/*.routes\"\n",
		"routes/bad.routes": "upstream a { server 127.0.0.1:99999 }\n" +
			"route one {\n  match PathRegexp(`[`)\n  to a\n}\n" +
			"route two {\n  match Path(`/x`)\n  to nowhere\n}\n",
	})
	out, code := runCLI(t, "validate", "-c", filepath.Join(dir, "edgeway.conf"))
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"bad.routes:1:", "bad.routes:3:", "bad.routes:8:", "^"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, code := runCLI(t, "validate", "-c", filepath.Join(testutil.ModuleRoot(t), "examples", "edgeway.conf")); code != 0 {
		t.Fatalf("examples/edgeway.conf does not validate")
	}
}

func TestExplain(t *testing.T) {
	conf := filepath.Join(testutil.ModuleRoot(t), "examples", "edgeway.conf")
	cases := []struct {
		desc string
		args []string
		want []string // the first line, then lines the answer contains
		code int
	}{
		{"api", []string{"GET", "http://localhost:8080/api/users?page=2"}, []string{"route api -> upstream api",
			"  listener  web", "  rule      PathPrefix(`/api/`) && Method(`GET`) (priority 36, ", "web.routes:14:1)",
			"  sent as   /users?page=2", "  upstream  balance round_robin; connect_timeout 5s, response_timeout 1m0s, idle_timeout 1m30s; retries 1"}, 0},
		{"method filters", []string{"POST", "http://localhost:8080/api/users"}, []string{"route default -> upstream demo", "  sent as   /api/users"}, 0},
		{"host header", []string{"-H", "Host: old.example.com", "GET", "http://localhost:8080/x?q=1"}, []string{"route old-site -> redirect 308 https://new.example.com/x?q=1"}, 0},
		{"demo listener by port", []string{"GET", "http://localhost:8081/users"}, []string{"route demo-users -> respond 200", "  listener  demo"}, 0},
		{"no listener on the port", []string{"GET", "http://localhost:9999/"}, []string{"edgeway: no listener has port 9999 (listeners: web 127.0.0.1:8080, demo 127.0.0.1:8081, "}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			out, code := runCLI(t, append([]string{"explain", "-c", conf}, tc.args...)...)
			first, _, _ := strings.Cut(out, "\n")
			if first != tc.want[0] && !strings.HasPrefix(first, tc.want[0]) || code != tc.code {
				t.Fatalf("got %q exit %d, want first line %q, exit %d", out, code, tc.want[0], tc.code)
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(out, w) {
					t.Errorf("answer lacks %q:\n%s", w, out)
				}
			}
		})
	}
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"e.conf": "listen web { addr 127.0.0.1:0 }\n" +
		"upstream pg { server 127.0.0.1:5432 }\nupstream up { server 127.0.0.1:80 }\n" +
		"tcp route db { match HostSNI(`db.example.com`) && ALPN(`postgresql`)\n to pg }\n" +
		"route r { match Host(`a.test`)\n to up }\n"})
	c := filepath.Join(dir, "e.conf")
	if out, code := runCLI(t, "explain", "-c", c, "--sni", "DB.example.com", "--alpn", "postgresql"); code != 0 || !strings.HasPrefix(out, "tcp route db -> upstream pg\n") {
		t.Fatalf("sni: %q exit %d", out, code)
	}
	if out, code := runCLI(t, "explain", "-c", c, "--sni", "db.example.com"); code != 1 || !strings.HasPrefix(out, "no route (no tcp route claims") {
		t.Fatalf("sni without alpn: %q exit %d", out, code)
	}
	if out, code := runCLI(t, "explain", "-c", c, "--listener", "web", "GET", "http://b.test/"); code != 1 || out != "no route\n" {
		t.Fatalf("http no route: %q exit %d", out, code)
	}
}

// runCLI runs dispatch in-process and returns stdout+stderr and the code.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out strings.Builder
	code := dispatch(args, &out, &out)
	return out.String(), code
}

func TestSIGHUPReload(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	routes := func(up string) string {
		return fmt.Sprintf("upstream a { server %s }\nupstream b { server %s }\nroute r { match PathPrefix(`/`)\n to %s }\n",
			hostPort(a), hostPort(b), up)
	}
	p, base, dir := startEdgeway(t, "", map[string]string{"r.routes": routes("a")})
	get := func() string { out, _ := testutil.Curl(t, base+"/"); return out }
	if got := get(); !strings.HasPrefix(got, "a ") {
		t.Fatalf("before reload: %q", got)
	}
	file := filepath.Join(dir, "routes", "r.routes")
	os.WriteFile(file, []byte(routes("b")), 0o644)
	p.Cmd.Process.Signal(syscall.SIGHUP)
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.HasPrefix(get(), "b ") }, "reload not applied")

	os.WriteFile(file, []byte("route r { match PathPrefix(`/`)\n to missing }\n"), 0o644)
	p.Cmd.Process.Signal(syscall.SIGHUP)
	p.WaitLog(t, `reload refused.*r\.routes:2:`)
	for i := 0; i < 5; i++ {
		if got := get(); !strings.HasPrefix(got, "b ") {
			t.Fatalf("bad reload changed routing: %q", got)
		}
	}

	// Renaming the bound listener cannot be applied by a reload: it is
	// refused whole, and the old routes keep serving on the old name.
	// The main file goes first: the watcher may reload between the two
	// writes, and every state it can see then holds the rename.
	mainFile := filepath.Join(dir, "edgeway.conf")
	main, _ := os.ReadFile(mainFile)
	os.WriteFile(mainFile, []byte(strings.Replace(string(main), "listen web ", "listen web2 ", 1)), 0o644)
	os.WriteFile(file, []byte(routes("a")), 0o644)
	p.Cmd.Process.Signal(syscall.SIGHUP)
	p.WaitLog(t, `reload refused.*listener changes need a restart`)
	if got := get(); !strings.HasPrefix(got, "b ") {
		t.Fatalf("refused reload changed routing: %q", got)
	}
}

func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "finished")
	}))
	t.Cleanup(up.Close)
	p, base, _ := startEdgeway(t, "", map[string]string{"a.routes": fmt.Sprintf(
		"upstream u { server %s }\nroute r { match PathPrefix(`/`)\n to u }\n", hostPort(up))})
	type result struct {
		out  string
		code int
	}
	done := make(chan result, 1)
	go func() { out, code := testutil.Curl(t, base+"/slow"); done <- result{out, code} }()
	<-entered
	p.Cmd.Process.Signal(syscall.SIGTERM)
	p.WaitLog(t, "shutting down")
	testutil.Eventually(t, 10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, "edgeway still accepts connections after SIGTERM")
	close(release)
	r := <-done
	if r.code != 0 || r.out != "finished" {
		t.Fatalf("in-flight request: exit %d body %q", r.code, r.out)
	}
	if code := p.Wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestShutdownGraceCutIsLogged: a request still in flight when
// shutdown_grace (5s here) ends is cut, and the log says so, naming the
// listener, the setting and what was closed; the exit is still clean.
func TestShutdownGraceCutIsLogged(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release // past the grace: released when the test ends
	}))
	t.Cleanup(func() { close(release); up.Close() })
	p, base, _ := startEdgeway(t, "", map[string]string{"a.routes": fmt.Sprintf(
		"upstream u { server %s\n response_timeout 1m }\nroute r { match PathPrefix(`/`)\n to u }\n", hostPort(up))})
	done := make(chan int, 1)
	go func() { _, code := testutil.Curl(t, base+"/slow"); done <- code }()
	<-entered
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if code := <-done; code == 0 {
		t.Error("the cut request's client saw a complete answer")
	}
	p.WaitLog(t, `shutdown_grace ended before every request finished.*shutdown_grace=5s.*listener web: forced close.*1 serving a request`)
}
