package main

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// respbufBody is the large answer: well past what the kernel's socket
// buffers hold between the server and a client that reads nothing (the
// server's are made small, the client's too).
const respbufBody = 16 << 20

// respbufServer is an upstream with small send buffers: /big answers
// respbufBody bytes and counts the answers it finished writing; /sse sends
// one event and then holds the stream until release is closed.
type respbufServer struct {
	*httptest.Server
	body     []byte
	finished atomic.Int32
	release  chan struct{}
}

func newRespbufServer(t *testing.T) *respbufServer {
	t.Helper()
	s := &respbufServer{body: randomBody(respbufBody), release: make(chan struct{})}
	mux := http.NewServeMux()
	big := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(s.body)))
		if _, err := w.Write(s.body); err == nil {
			s.finished.Add(1)
		}
	}
	mux.HandleFunc("/big", big)
	mux.HandleFunc("/stream/big", big)
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-s.release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/noaccel", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Accel-Buffering", "no")
		io.WriteString(w, "unbuffered")
	})
	s.Server = httptest.NewUnstartedServer(mux)
	s.Server.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			c.(*net.TCPConn).SetWriteBuffer(32 << 10)
		}
	}
	s.Start()
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		s.Close()
	})
	return s
}

// startRespbuf runs edgeway in front of up with the given buffers block
// lines, a listener with small socket send buffers, and a route with
// response_buffering off under /stream.
func startRespbuf(t *testing.T, up *respbufServer, buffers string) (*adminEdgeway, string) {
	t.Helper()
	dir := t.TempDir()
	bufDir := filepath.Join(dir, "bodies")
	tokenFile := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	main := fmt.Sprintf(`
admin { listen 127.0.0.1:0; token_file %q }
buffers { %s; dir %q }
listen web { addr 127.0.0.1:0; protocols http1 h2c; sndbuf 64KiB }
upstream u { server %s }
route all { match PathPrefix(`+"`/`"+`); to u }
route stream { match PathPrefix(`+"`/stream`"+`); to u; response_buffering off }
`, tokenFile, buffers, bufDir, up.Listener.Addr())
	testutil.WriteFiles(t, dir, map[string]string{"edgeway.conf": main})
	p := testutil.Start(t, filepath.Join(dir, "edgeway.conf"))
	addrs := p.Addrs(t, 1)
	m := adminAddrRE.FindStringSubmatch(p.Log())
	if m == nil {
		t.Fatalf("no admin address in the log:\n%s", p.Log())
	}
	return &adminEdgeway{p: p, base: "http://" + addrs["web"], admin: "http://" + m[1], dir: dir}, bufDir
}

// respbufSlowGet sends GET path on a connection with a small receive
// buffer and reads nothing: the caller reads the answer when it wants to.
func respbufSlowGet(t *testing.T, base, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		})
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	return c, bufio.NewReaderSize(c, 4<<10)
}

// respbufReadAll reads the answer to the slow GET and checks it is the
// server's body, whole.
func respbufReadAll(t *testing.T, c net.Conn, br *bufio.Reader, want []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil || resp.StatusCode != 200 || n != int64(len(want)) || [32]byte(h.Sum(nil)) != sha256.Sum256(want) {
		t.Fatalf("status %d, read %d bytes (%v), want %d bytes of the server's body", resp.StatusCode, n, err, len(want))
	}
}

// TestResponseBufferingE2E: a slow reader of a large answer frees the
// server before it reads a byte; streams are never held back; nothing is
// left in the buffers dir, even after kill -9.
func TestResponseBufferingE2E(t *testing.T) {
	up := newRespbufServer(t)
	e, bufDir := startRespbuf(t, up, "memory 1MiB; response_memory 256KiB")

	t.Run("a slow reader frees the server", func(t *testing.T) {
		before := up.finished.Load()
		c, br := respbufSlowGet(t, e.base, "/big")
		testutil.Eventually(t, 30*time.Second, func() bool { return up.finished.Load() > before },
			"the server never finished writing its answer to a client that reads nothing")
		// The answer is held by edgeway, mostly in its unnamed file.
		if v := e.metricValue(t, `edgeway_response_buffer_bytes{where="disk"}`); v == "" || v == "0" {
			t.Errorf("edgeway_response_buffer_bytes{where=\"disk\"} = %q while a 16 MiB answer waits", v)
		}
		emptyDir(t, bufDir)
		respbufReadAll(t, c, br, up.body)
		testutil.Eventually(t, 10*time.Second, func() bool {
			return e.metricValue(t, `edgeway_response_buffer_bytes{where="disk"}`) == "0" &&
				e.metricValue(t, `edgeway_response_buffer_bytes{where="memory"}`) == "0"
		}, "the buffers were not handed back after the answer")
		emptyDir(t, bufDir)
	})

	t.Run("the first event of a stream arrives at once", func(t *testing.T) {
		c, br := respbufSlowGet(t, e.base, "/sse")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || line != "data: one\n" {
			t.Fatalf("first event: %q (%v), want it while the server holds the stream open", line, err)
		}
	})

	t.Run("X-Accel-Buffering is not passed on", func(t *testing.T) {
		resp, err := http.Get(e.base + "/noaccel")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "unbuffered" || resp.Header.Get("X-Accel-Buffering") != "" {
			t.Errorf("body %q, X-Accel-Buffering %q: want the body, without the field", b, resp.Header.Get("X-Accel-Buffering"))
		}
	})

	t.Run("kill -9 leaves no file", func(t *testing.T) {
		before := up.finished.Load()
		respbufSlowGet(t, e.base, "/big")
		testutil.Eventually(t, 30*time.Second, func() bool { return up.finished.Load() > before },
			"the server never finished its answer")
		if v := e.metricValue(t, `edgeway_response_buffer_bytes{where="disk"}`); v == "" || v == "0" {
			t.Fatalf("no answer on disk (%q)", v)
		}
		emptyDir(t, bufDir)
		if err := e.p.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		e.p.Wait(t, 10*time.Second)
		emptyDir(t, bufDir)
	})
}

// TestResponseBufferingCapsE2E: past response_max the rest of an answer
// streams at the client's pace (counted), and what edgeway holds stays
// under the caps; the answer still arrives whole.
func TestResponseBufferingCapsE2E(t *testing.T) {
	up := newRespbufServer(t)
	e, bufDir := startRespbuf(t, up, "memory 1MiB; response_memory 128KiB; response_max 1MiB")
	c, br := respbufSlowGet(t, e.base, "/big")
	testutil.Eventually(t, 30*time.Second, func() bool {
		return e.metricValue(t, "edgeway_response_buffer_overflow_total") == "1"
	}, "the answer never reached response_max")
	mem, _ := strconv.Atoi(e.metricValue(t, `edgeway_response_buffer_bytes{where="memory"}`))
	disk, _ := strconv.Atoi(e.metricValue(t, `edgeway_response_buffer_bytes{where="disk"}`))
	if mem > 128<<10+64<<10 || mem+disk > 1<<20+64<<10 {
		t.Errorf("holding %d bytes in memory and %d on disk: past response_memory 128KiB / response_max 1MiB", mem, disk)
	}
	if up.finished.Load() != 0 {
		t.Error("the server finished a 16 MiB answer that edgeway may hold 1 MiB of")
	}
	respbufReadAll(t, c, br, up.body)
	emptyDir(t, bufDir)

	t.Run("response_buffering off streams", func(t *testing.T) {
		// A negative control for the slow reader test: the same answer on
		// a streaming route is taken at the client's pace, so nothing is
		// buffered while the client reads it.
		c, br := respbufSlowGet(t, e.base, "/stream/big")
		respbufReadAll(t, c, br, up.body)
		if v := e.metricValue(t, "edgeway_response_buffer_spills_total"); v != "1" {
			t.Errorf("edgeway_response_buffer_spills_total = %q after one more answer on a streaming route, want still 1", v)
		}
	})
}
