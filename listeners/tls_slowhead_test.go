package listeners

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestTLSSlowHeadParks: over TLS too, a head that has begun and not
// ended waits parked (its decrypted bytes held by the engine, no Serve
// call running), is served once it ends, and a head that never ends is
// cut at read_header_timeout.
func TestTLSSlowHeadParks(t *testing.T) {
	cfg := testConfig()
	cfg.ReadHeaderTimeout = 400 * time.Millisecond
	e := startTLS(t, cfg)
	dial := func() *tls.Conn {
		c, err := tls.Dial("tcp", e.s.Addr().String(), &tls.Config{RootCAs: e.ca.Pool, ServerName: "site.test", NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := dial()
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHo")
	testutil.Eventually(t, ioTimeout, func() bool { st := e.s.Stats(); return st.Held == 1 && st.Active == 0 },
		"the begun head is not held: %+v", e.s.Stats())
	io.WriteString(c, "st: site.test\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.HasPrefix(string(b), "proto=1 tls=true") {
		t.Fatalf("%d %q, want 200 from the handler", res.StatusCode, b)
	}

	// A head that never ends is cut at the timeout, not after the
	// minute of idle_timeout.
	c2 := dial()
	begin := time.Now()
	io.WriteString(c2, "GET / HTTP/1.1\r\n")
	c2.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = c2.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("read: %v, want the connection closed", err)
	}
	if d := time.Since(begin); d < 350*time.Millisecond || d > 15*time.Second {
		t.Fatalf("cut after %v, want about read_header_timeout (400ms, swept within a second)", d)
	}
}
