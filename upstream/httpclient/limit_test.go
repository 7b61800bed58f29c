package httpclient

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

// gated answers each request 200 once release has a value for it.
func gated(t *testing.T, release chan struct{}) string {
	addr, _ := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			<-release
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
		}
	})
	return addr
}

func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	release := make(chan struct{}, 8)
	addr := gated(t, release)
	tr := newTestTransport(t, func(u *conf.Upstream) {
		u.MaxConnections, u.MaxPending, u.ConnectTimeout = 1, 1, 5*time.Second
	})
	type result struct {
		body string
		err  error
	}
	run := func() chan result {
		ch := make(chan result, 1)
		go func() {
			b, err := fetch(tr, addr)
			ch <- result{b, err}
		}()
		return ch
	}
	first := run() // takes the only connection, held until released
	testutil.WaitFor(t, "the first request to hold the connection", func() bool {
		tr.lim.mu.Lock()
		defer tr.lim.mu.Unlock()
		return tr.lim.open == 1
	})
	second := run() // waits for it
	testutil.WaitFor(t, "the second request to wait", func() bool {
		tr.lim.mu.Lock()
		defer tr.lim.mu.Unlock()
		return tr.lim.pending == 1
	})
	// A third finds the wait list full.
	_, _, err := get(t, tr, "GET", addr)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "max_pending" {
		t.Fatalf("third request: %v, want a max_pending LimitError", err)
	}
	release <- struct{}{}
	release <- struct{}{}
	for i, ch := range []chan result{first, second} {
		if r := <-ch; r.err != nil || r.body != "ok" {
			t.Fatalf("request %d: %q %v", i, r.body, r.err)
		}
	}
	tr.lim.mu.Lock()
	open := tr.lim.open
	tr.lim.mu.Unlock()
	if open != 1 {
		t.Errorf("%d connections counted, want the one pooled", open)
	}
}

func TestConnectionLimitTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	addr := gated(t, release)
	// The connect timeout also bounds the first request's dial, which
	// must succeed: 1s is a margin a loaded CI machine cannot miss on
	// loopback, where 100ms could time the dial out and free the slot.
	const connectTimeout = time.Second
	tr := newTestTransport(t, func(u *conf.Upstream) {
		u.MaxConnections, u.MaxPending, u.ConnectTimeout = 1, 4, connectTimeout
	})
	go fetch(tr, addr)
	testutil.WaitFor(t, "the first request to hold the connection", func() bool {
		tr.lim.mu.Lock()
		defer tr.lim.mu.Unlock()
		return tr.lim.open == 1
	})
	start := time.Now()
	_, _, err := get(t, tr, "GET", addr)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "max_connections" {
		t.Fatalf("second request: %v, want a max_connections LimitError", err)
	}
	if d := time.Since(start); d < connectTimeout {
		t.Errorf("gave up after %v, before the connect timeout", d)
	}
}

// fetch is get for a goroutine other than the test's: it reports every
// failure as its error.
func fetch(tr http.RoundTripper, addr string) (string, error) {
	req, err := http.NewRequest("GET", "http://"+addr+"/", nil)
	if err != nil {
		return "", err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
