package router

import (
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/upstream"
	"github.com/edgeway/edgeway/upstream/httpclient"
)

// Mirroring (conf.Mirror): once the primary has answered, a copy of the
// request (a request without a body; one with a body is skipped and
// counted) goes on a bounded queue that a few workers send to the mirror
// pool; their answers are read and discarded, and a status other than
// the primary's is counted. A full queue drops the copy (counted): a slow
// or dead mirror costs the primary one non-blocking channel send. The
// copy is made of strings cloned out of the request, so nothing it holds
// views pooled memory.

// mirrorQueue is how many copies wait for a worker, per route.
const mirrorQueue = 64

// mirrorWorkers is how many copies one route's mirror sends at a time.
const mirrorWorkers = 4

// mirrorRegistry keeps the routes' mirrors by route name across reloads.
type mirrorRegistry struct {
	byName map[string]*mirror // guarded by Router.mu
	view   atomic.Pointer[map[string]*mirror]
}

// mirror is one route's mirror: its queue, workers and counters.
type mirror struct {
	route string
	pool  atomic.Pointer[upstream.Pool]
	name  atomic.Pointer[string] // the pool's name
	share atomic.Int64           // basis points
	n     atomic.Uint64          // requests seen, for the share
	queue chan *mirrorCopy
	stop  chan struct{}
	once  sync.Once

	sent, dropped, skipped, failed, differs atomic.Uint64
}

// mirrorCopy is one request to send to the mirror.
type mirrorCopy struct {
	req     httpclient.Request
	pick    httpmsg.Request
	primary int // the primary's status
}

// attachMirrors gives the routes of s their mirrors: kept by route name,
// pointed at the pool the files name now; those of routes gone stop.
func (s *Snapshot) attachMirrors(reg *mirrorRegistry, cfg *conf.Config, pools map[string]*upstream.Pool) {
	byRoute := map[string]*conf.Mirror{}
	for i := range cfg.Routes {
		if m := cfg.Routes[i].Mirror; m != nil {
			byRoute[cfg.Routes[i].Name] = m
		}
	}
	next := map[string]*mirror{}
	for name, mc := range byRoute {
		m := reg.byName[name]
		if m == nil {
			m = newMirror(name)
		}
		m.pool.Store(pools[mc.Upstream])
		up := mc.Upstream
		m.name.Store(&up)
		m.share.Store(int64(mc.Share))
		next[name] = m
	}
	for name, m := range reg.byName {
		if next[name] == nil {
			m.close()
		}
	}
	for _, hl := range s.http {
		for _, rt := range hl.routes {
			rt.mirror = next[rt.name]
			for _, v := range rt.targets() {
				v.mirror = rt.mirror
			}
		}
	}
	reg.byName = next
	reg.view.Store(&next)
}

func newMirror(route string) *mirror {
	m := &mirror{route: route, queue: make(chan *mirrorCopy, mirrorQueue), stop: make(chan struct{})}
	for range mirrorWorkers {
		panics.Go("mirror", m.work)
	}
	return m
}

// close stops the workers; copies still queued are dropped.
func (m *mirror) close() { m.once.Do(func() { close(m.stop) }) }

// closeMirrors stops every mirror (Router.Close).
func (reg *mirrorRegistry) closeAll() {
	for _, m := range reg.byName {
		m.close()
	}
}

// mirrorRequest queues a copy of the finished request when the route
// mirrors and the request falls in the share. It never blocks.
func (x *exchange) mirrorRequest() {
	m := x.rt.mirror
	if m == nil || x.outcome == upstream.Abandoned || x.out.Method == "" {
		return
	}
	n := m.n.Add(1)
	share := uint64(m.share.Load())
	if n*share/conf.ShareScale == (n-1)*share/conf.ShareScale {
		return // not this one: exactly the share of every ShareScale
	}
	in := x.in
	if in.ContentLength != 0 || in.Body != nil && in.ContentLength < 0 {
		m.skipped.Add(1)
		return
	}
	c := &mirrorCopy{primary: x.logStatus()}
	hdr := make(httpmsg.Header, len(x.outHdr))
	for i, f := range x.outHdr {
		hdr[i] = httpmsg.Field{Name: strings.Clone(f.Name), Value: strings.Clone(f.Value)}
	}
	c.req = httpclient.Request{Method: strings.Clone(x.out.Method), Target: strings.Clone(x.out.Target),
		Host: strings.Clone(x.out.Host), Header: hdr, ResponseTimeout: x.rt.respTimeout, ConnectTimeout: x.rt.connectTimeout}
	c.pick = httpmsg.Request{Method: c.req.Method, Target: c.req.Target, Host: c.req.Host, Header: hdr}
	select {
	case m.queue <- c:
	default:
		m.dropped.Add(1)
	}
}

// work sends queued copies until the mirror stops.
func (m *mirror) work() {
	for {
		select {
		case <-m.stop:
			return
		case c := <-m.queue:
			m.send(c)
		}
	}
}

func (m *mirror) send(c *mirrorCopy) {
	pool := m.pool.Load()
	if pool == nil {
		m.failed.Add(1)
		return
	}
	s, err := pool.Pick(&c.pick, nil)
	if err != nil {
		m.failed.Add(1)
		return
	}
	var resp httpclient.Response
	err = pool.Transport().Do(s.Addr, &c.req, &resp)
	if err != nil {
		m.failed.Add(1)
		s.Done(upstream.Result{Outcome: upstream.Failure, ConnectFailed: httpclient.IsConnectError(err)})
		return
	}
	if resp.Body != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	s.Done(upstream.Result{Outcome: upstream.Success, Status: resp.Status})
	m.sent.Add(1)
	if resp.Status != c.primary {
		m.differs.Add(1)
	}
}

// MirrorStatus is a route's mirror counts since start.
type MirrorStatus struct {
	Route, Upstream string
	// Sent copies got an answer, Failed ones none (no server, a
	// connection or timeout failure); Dropped found the queue full,
	// Skipped had a body; Differs counts answers whose status was not
	// the primary's.
	Sent, Failed, Dropped, Skipped, Differs uint64
}

// Mirrors returns every mirroring route's counts, by route name.
func (r *Router) Mirrors() []MirrorStatus {
	var out []MirrorStatus
	m := r.mirrors.view.Load()
	if m == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(*m)) {
		mr := (*m)[name]
		up := ""
		if p := mr.name.Load(); p != nil {
			up = *p
		}
		out = append(out, MirrorStatus{Route: name, Upstream: up, Sent: mr.sent.Load(), Failed: mr.failed.Load(),
			Dropped: mr.dropped.Load(), Skipped: mr.skipped.Load(), Differs: mr.differs.Load()})
	}
	return out
}
