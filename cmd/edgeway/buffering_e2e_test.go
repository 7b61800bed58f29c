package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// bodySink is a real upstream that counts its accepted connections and
// answers with the length and SHA-256 of the body it read; started tells
// when a handler begins (before it reads the body).
type bodySink struct {
	*httptest.Server
	conns   atomic.Int64
	started chan string // the request's path
}

func newBodySink(t *testing.T) *bodySink {
	t.Helper()
	s := &bodySink{started: make(chan string, 16)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.started <- r.URL.Path
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			w.WriteHeader(499)
			return
		}
		w.Header().Set("X-Got-Expect", r.Header.Get("Expect"))
		fmt.Fprintf(w, "%d %s", n, hex.EncodeToString(h.Sum(nil)))
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func sinkDigest(b []byte) string {
	h := sha256.Sum256(b)
	return strconv.Itoa(len(b)) + " " + hex.EncodeToString(h[:])
}

func randomBody(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{9}).Read(b)
	return b
}

// startBuffering runs edgeway with an admin API, a listener with a short
// body_timeout, small buffers in their own dir and two routes to up: /
// buffered, /stream with request_buffering off.
func startBuffering(t *testing.T, up *bodySink) (*adminEdgeway, string) {
	t.Helper()
	testutil.RequireCurl(t)
	dir := t.TempDir()
	bufDir := filepath.Join(dir, "bodies") // made at start
	tokenFile := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	main := fmt.Sprintf(`
admin { listen 127.0.0.1:0; token_file %q }
buffers { memory 512KiB; request_memory 128KiB; disk 64MiB; dir %q }
listen web {
  addr 127.0.0.1:0
  protocols http1 h2c
  read_header_timeout 2s
  body_timeout 1500ms
}
upstream u { server %s }
route all { match PathPrefix(`+"`/`"+`); to u }
route stream { match PathPrefix(`+"`/stream`"+`); to u; request_buffering off }
`, tokenFile, bufDir, up.Listener.Addr())
	testutil.WriteFiles(t, dir, map[string]string{"edgeway.conf": main})
	p := testutil.Start(t, filepath.Join(dir, "edgeway.conf"))
	addrs := p.Addrs(t, 1)
	m := adminAddrRE.FindStringSubmatch(p.Log())
	if m == nil {
		t.Fatalf("no admin address in the log:\n%s", p.Log())
	}
	return &adminEdgeway{p: p, base: "http://" + addrs["web"], admin: "http://" + m[1], dir: dir}, bufDir
}

// metricValue reads one sample of /metrics ("" when absent).
func (e *adminEdgeway) metricValue(t *testing.T, sample string) string {
	t.Helper()
	_, body := e.do(t, http.MethodGet, "/metrics", true)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// emptyDir checks that the buffers dir holds no file.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 0 {
		t.Errorf("buffers dir %s: %d names (%v), want none: temporary files are unlinked at open", dir, len(ents), err)
	}
}

// TestBufferingE2E runs request buffering through the real binary and its
// HTTP/1 engine and h2c front end.
func TestBufferingE2E(t *testing.T) {
	up := newBodySink(t)
	e, bufDir := startBuffering(t, up)
	addr := strings.TrimPrefix(e.base, "http://")
	held := func() string {
		return e.metricValue(t, `edgeway_buffer_bytes{where="memory"}`) + "/" + e.metricValue(t, `edgeway_buffer_bytes{where="disk"}`)
	}
	idle := func(t *testing.T) {
		t.Helper()
		testutil.Eventually(t, 5*time.Second, func() bool { return held() == "0/0" },
			"buffers still hold memory/disk %s", held())
		emptyDir(t, bufDir)
	}

	t.Run("slow uploader gets 408 and no upstream connection", func(t *testing.T) {
		before := up.conns.Load()
		c := testutil.DialRaw(t, addr)
		io.WriteString(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabcd")
		for range 3 { // progress, each gap under body_timeout
			time.Sleep(200 * time.Millisecond) // pacing the sender, not waiting for an event
			io.WriteString(c, "ef")
		}
		last := time.Now()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("status %d, want 408", resp.StatusCode)
		}
		if d := time.Since(last); d < 500*time.Millisecond {
			t.Errorf("cut %v after the last byte, before body_timeout", d)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("the connection is still open after the 408 (read: %v)", err)
		}
		if n := up.conns.Load() - before; n != 0 {
			t.Errorf("the upstream accepted %d connections for the slow upload, want 0", n)
		}
		idle(t)
	})

	t.Run("large bodies spill and arrive whole over HTTP/1.1 and h2c", func(t *testing.T) {
		var dials atomic.Int32
		clients := map[string]*http.Client{"http1": {Timeout: 20 * time.Second}, "h2c": h2Client(addr, nil, &dials)}
		for name, c := range clients {
			body := randomBody(6<<20 + 1)
			spills := e.metricValue(t, "edgeway_buffer_spills_total")
			resp, err := c.Post(e.base+"/upload", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(got) != sinkDigest(body) {
				t.Errorf("%s: %d %q, want 200 %q", name, resp.StatusCode, got, sinkDigest(body))
			}
			if after := e.metricValue(t, "edgeway_buffer_spills_total"); after == spills {
				t.Errorf("%s: edgeway_buffer_spills_total stayed %s for a 6 MiB body", name, after)
			}
			idle(t)
		}
		if dials.Load() == 0 {
			t.Error("the h2c client never connected")
		}
	})

	t.Run("Expect 100-continue is answered by edgeway", func(t *testing.T) {
		c := testutil.DialRaw(t, addr)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "PUT /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		br := bufio.NewReader(c)
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("first line %q (%v), want 100 Continue", line, err)
		}
		br.ReadString('\n')
		io.WriteString(c, "hello")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(got) != sinkDigest([]byte("hello")) || resp.Header.Get("X-Got-Expect") != "" {
			t.Errorf("%d %q Expect upstream %q; want 200, the body, no Expect", resp.StatusCode, got, resp.Header.Get("X-Got-Expect"))
		}
	})

	t.Run("request_buffering off streams", func(t *testing.T) {
		pr, pw := io.Pipe()
		done := make(chan string, 1)
		go func() {
			req, _ := http.NewRequest("POST", e.base+"/stream/x", pr)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- string(b)
		}()
		// More than the retries' body_buffer (64KiB by default), which a
		// streamed body fills before it is sent, to be able to retry it.
		first := randomBody(100 << 10)
		go pw.Write(first)
		timeout := time.After(10 * time.Second)
		for p := ""; p != "/stream/x"; { // earlier requests' paths come first
			select {
			case p = <-up.started:
			case <-timeout:
				t.Fatal("the upstream saw nothing before the body ended: the route buffered")
			}
		}
		pw.Write([]byte("and the rest"))
		pw.Close()
		if got := <-done; got != sinkDigest(append(first, "and the rest"...)) {
			t.Errorf("answer %q", got)
		}
	})

	t.Run("kill -9 leaves no file", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			req, _ := http.NewRequest("POST", e.base+"/big", pr)
			req.ContentLength = 32 << 20
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		go pw.Write(randomBody(4 << 20)) // then it waits: the body is never complete
		testutil.Eventually(t, 10*time.Second, func() bool {
			v := e.metricValue(t, `edgeway_buffer_bytes{where="disk"}`)
			return v != "" && v != "0"
		}, "the body never spilled: memory/disk %s", held())
		emptyDir(t, bufDir) // a file with no name, even while it is written
		if err := e.p.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		e.p.Wait(t, 10*time.Second)
		pw.CloseWithError(io.ErrClosedPipe)
		emptyDir(t, bufDir)
	})
}
