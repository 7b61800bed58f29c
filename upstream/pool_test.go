package upstream

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

func upstreamConf(name string, weights ...int) conf.Upstream {
	c := conf.Upstream{Name: name, ConnectTimeout: time.Second, ResponseTimeout: time.Second,
		IdleTimeout: time.Minute, MaxIdleConns: 4}
	for i, w := range weights {
		c.Servers = append(c.Servers, conf.Server{Addr: string(rune('a'+i)) + ":80", Weight: w})
	}
	return c
}

func TestPoolPickSequence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		weights []int
		want    string
	}{
		{desc: "nginx 5 1 1", weights: []int{5, 1, 1}, want: "a:80 a:80 b:80 a:80 c:80 a:80 a:80"},
		{desc: "weight 0 skipped", weights: []int{0, 1}, want: "b:80 b:80 b:80"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			p := NewPool(upstreamConf("u", tc.weights...))
			var got []string
			for range strings.Count(tc.want, " ") + 1 {
				s, err := p.Pick(nil, nil)
				if err != nil {
					t.Fatalf("Pick: %v", err)
				}
				got = append(got, s.Addr)
				s.Done(Result{Outcome: Success})
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("picks = %q, want %q", g, tc.want)
			}
		})
	}
}

func TestPoolNoServer(t *testing.T) {
	t.Parallel()
	for _, c := range []conf.Upstream{upstreamConf("none"), upstreamConf("zero", 0, 0)} {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			_, err := NewPool(c).Pick(nil, nil)
			if !errors.Is(err, ErrNoServer) {
				t.Fatalf("Pick error = %v, want ErrNoServer", err)
			}
		})
	}
}

func TestPoolConcurrentPicks(t *testing.T) {
	t.Parallel()
	p := NewPool(upstreamConf("u", 3, 1, 0))
	const workers, each = 8, 400
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range each {
				s, err := p.Pick(nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				s.Done(Result{Outcome: Outcome(i % 3)})
			}
		})
	}
	wg.Wait()
	var total uint64
	for i, s := range p.Servers() {
		if n := s.State.InFlight.Load(); n != 0 {
			t.Errorf("server %s in flight = %d after all Done", s.Addr, n)
		}
		want := uint64(workers * each * []int{3, 1, 0}[i] / 4)
		if got := s.State.Requests.Load(); got != want {
			t.Errorf("server %s requests = %d, want %d", s.Addr, got, want)
		}
		total += s.State.Failures.Load()
	}
	if total == 0 {
		t.Error("no failures recorded")
	}
}

// TestPoolCloseDrains checks that a closed pool keeps serving the request in
// flight and closes its keep-alive connection once that request is Done.
func TestPoolCloseDrains(t *testing.T) {
	t.Parallel()
	var closed atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := upstreamConf("u")
	c.Servers = []conf.Server{{Addr: srv.Listener.Addr().String(), Weight: 1}}
	p := NewPool(c)
	s, err := p.Pick(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	resp, err := p.Transport().RoundTrip(httptest.NewRequest("GET", "http://"+s.Addr+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.Done(Result{Outcome: Success})
	testutil.WaitFor(t, "idle connection closed", func() bool { return closed.Load() == 1 })
}
