package testutil

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// LoadOptions configures a bounded load generator (see StartLoad).
type LoadOptions struct {
	// Clients is the number of client goroutines, each with a keep-alive
	// connection of its own [8].
	Clients int
	// Timeout bounds each request, body included [2s].
	Timeout time.Duration
	// Pace is a pause between two requests of one client [none].
	Pace time.Duration
	// URL returns the URL client i (0..Clients-1) requests; GET only.
	URL func(i int) string
	// Observe, when set, is called from the client goroutine after each
	// request: with the response (its body read and closed) or the
	// transport error.
	Observe func(i int, resp *http.Response, err error)
}

// LoadCounts counts the outcomes of requests.
type LoadCounts struct {
	OK     int64 // 2xx
	Non2xx int64 // any other status
	Errors int64 // transport errors and timeouts: no status
}

// Total is the number of requests counted.
func (c LoadCounts) Total() int64 { return c.OK + c.Non2xx + c.Errors }

// Failed is the number of requests that did not get a 2xx.
func (c LoadCounts) Failed() int64 { return c.Non2xx + c.Errors }

// Sub returns c - d, the counts of a phase between two snapshots.
func (c LoadCounts) Sub(d LoadCounts) LoadCounts {
	return LoadCounts{OK: c.OK - d.OK, Non2xx: c.Non2xx - d.Non2xx, Errors: c.Errors - d.Errors}
}

func (c LoadCounts) String() string {
	return fmt.Sprintf("%d requests: %d ok, %d non-2xx, %d transport errors", c.Total(), c.OK, c.Non2xx, c.Errors)
}

// Load is a running load generator: a fixed number of clients sending GET
// requests in a loop until Stop. A request is counted when it completes,
// so the counts of a phase (Counts before and after, Sub) hold the
// requests that completed in it.
type Load struct {
	o               LoadOptions
	stop            chan struct{}
	stopOnce        sync.Once
	wg              sync.WaitGroup
	ok, non2xx, err atomic.Int64
	mu              sync.Mutex
	failures        []string
}

// maxFailures is how many failure descriptions a Load keeps.
const maxFailures = 20

// StartLoad starts the clients; they stop at Stop or when the test ends.
func StartLoad(t testing.TB, o LoadOptions) *Load {
	t.Helper()
	if o.Clients <= 0 {
		o.Clients = 8
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.URL == nil {
		t.Fatal("StartLoad: no URL")
	}
	l := &Load{o: o, stop: make(chan struct{})}
	for i := range o.Clients {
		l.wg.Add(1)
		go l.client(i)
	}
	t.Cleanup(func() { l.Stop() })
	return l
}

func (l *Load) client(i int) {
	defer l.wg.Done()
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: l.o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var pace *time.Timer
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		url := l.o.URL(i)
		start := time.Now()
		resp, err := c.Get(url)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		switch {
		case err != nil:
			l.err.Add(1)
			l.note("%s GET %s: %v after %v", start.Format("15:04:05.000"), url, err, time.Since(start).Round(time.Millisecond))
		case resp.StatusCode/100 == 2:
			l.ok.Add(1)
		default:
			l.non2xx.Add(1)
			l.note("%s GET %s: %s after %v", start.Format("15:04:05.000"), url, resp.Status, time.Since(start).Round(time.Millisecond))
		}
		if l.o.Observe != nil {
			if err != nil {
				resp = nil
			}
			l.o.Observe(i, resp, err)
		}
		if l.o.Pace > 0 {
			if pace == nil {
				pace = time.NewTimer(l.o.Pace)
			} else {
				pace.Reset(l.o.Pace)
			}
			select {
			case <-l.stop:
				return
			case <-pace.C:
			}
		}
	}
}

func (l *Load) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < maxFailures {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

// Counts returns the counts so far.
func (l *Load) Counts() LoadCounts {
	return LoadCounts{OK: l.ok.Load(), Non2xx: l.non2xx.Load(), Errors: l.err.Load()}
}

// Failures returns descriptions of the first failed requests (at most 20).
func (l *Load) Failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.failures...)
}

// Stop stops the clients, waits for their requests in flight to complete
// and returns the final counts. It may be called more than once.
func (l *Load) Stop() LoadCounts {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
	return l.Counts()
}
