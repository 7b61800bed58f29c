package router

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/upstream"
	"github.com/edgeway/edgeway/upstream/httpclient"
)

// Mirroring (conf.Mirror): a route's `mirror UPSTREAM [PERCENT]` sends a
// copy of that share of its requests to another pool and drops the
// answer. The copy never delays the primary request: the request's
// goroutine only counts, copies the head (and a body held whole in
// memory, at most conf.MirrorMaxBody bytes) out of the front end's
// buffers and picks a server; the copy goes out on a goroutine of its
// own, at most conf.MirrorMaxInFlight at a time per mirror line. Past
// that a copy is dropped; a body that streams (or is larger, or spilled
// to disk) is not copied and the copy is skipped; both are counted
// (edgeway_upstream_mirror_requests_total). The share is exact over any
// run of requests: the n-th request is copied when n×PERCENT/100 passes a
// whole number, so 10% copies exactly one request in ten.
//
// A copy is the request as it goes to the primary (the same target, Host
// and outbound fields, X-Forwarded-* included), with no PROXY header
// source, bounded by mirrorTimeout end to end; its answer counts for the
// mirror pool's server as any answer does (health, outlier ejection), and
// never for the route's own pool.

// mirrorTimeout bounds a copy from its start to the end of its answer.
const mirrorTimeout = 30 * time.Second

// Mirror results (edgeway_upstream_mirror_requests_total{result}).
const (
	mirrorSent    = iota // sent, answered (any status)
	mirrorFailed         // no server, or no valid answer
	mirrorDropped        // MirrorMaxInFlight copies were in flight
	mirrorSkipped        // the body could not be copied
	numMirrorResults
)

var mirrorResults = [numMirrorResults]string{"sent", "failed", "dropped", "skipped"}

// mirror is one `mirror` line of a route, compiled at load.
type mirror struct {
	upstream string
	percent  uint64
	pool     *upstream.Pool // attach
	stats    *upstreamStats // attachMetrics; nil without metrics
	seen     atomic.Uint64  // requests the route forwarded
	inFlight atomic.Int64
}

func compileMirrors(ms []conf.Mirror) []*mirror {
	if len(ms) == 0 {
		return nil
	}
	out := make([]*mirror, len(ms))
	for i, m := range ms {
		out[i] = &mirror{upstream: m.Upstream, percent: uint64(m.Percent)}
	}
	return out
}

// due reports whether this request is one the mirror copies.
func (m *mirror) due() bool {
	n := m.seen.Add(1)
	return n*m.percent/100 != (n-1)*m.percent/100
}

func (m *mirror) count(result int) {
	if m.stats != nil {
		m.stats.mirror[result].Add(1)
	}
}

// mirrorCopy is a request copied out of an exchange: it owns every byte.
type mirrorCopy struct {
	req  httpclient.Request
	body []byte
}

// mirror sends the copies the route's mirrors are due (after
// buildOutbound: x.out is the request the primary gets).
func (x *exchange) mirror() {
	var cp *mirrorCopy
	for _, m := range x.rt.mirrors {
		if !m.due() {
			continue
		}
		if m.pool == nil {
			m.count(mirrorFailed)
			continue
		}
		if m.inFlight.Add(1) > conf.MirrorMaxInFlight {
			m.inFlight.Add(-1)
			m.count(mirrorDropped) // before any copy: a drop costs nothing
			continue
		}
		if cp == nil {
			if cp = x.mirrorCopy(); cp == nil {
				m.inFlight.Add(-1)
				m.count(mirrorSkipped)
				continue
			}
		}
		s, err := m.pool.Pick(x.in, nil)
		if err != nil {
			m.inFlight.Add(-1)
			m.count(mirrorFailed)
			continue
		}
		panics.Go("mirror", func() { m.send(s, cp) })
	}
}

// mirrorCopy copies x.out and its body out of the exchange's buffers;
// nil when the body cannot be copied (it streams, spilled to disk, or is
// over conf.MirrorMaxBody) or the request is an upgrade.
func (x *exchange) mirrorCopy() *mirrorCopy {
	o := &x.out
	if x.in.Header.Get("Upgrade") != "" || o.Method == "CONNECT" {
		return nil
	}
	cp := &mirrorCopy{}
	if o.ContentLength != 0 {
		if x.bufState != bufWhole || x.body.Spilled() || x.body.Size() > conf.MirrorMaxBody {
			return nil
		}
		cp.body = make([]byte, x.body.Size())
		r := x.body.NewReader()
		if _, err := io.ReadFull(&r, cp.body); err != nil {
			return nil
		}
	}
	h := make(httpmsg.Header, len(o.Header))
	for i, f := range o.Header {
		h[i] = httpmsg.Field{Name: strings.Clone(f.Name), Value: strings.Clone(f.Value)}
	}
	cp.req = httpclient.Request{
		ResponseTimeout: o.ResponseTimeout,
		Method:          strings.Clone(o.Method), Target: strings.Clone(o.Target), Host: strings.Clone(o.Host),
		Header: h, ContentLength: int64(len(cp.body)),
	}
	return cp
}

// send sends one copy to s and drops the answer; it runs on its own
// goroutine, and each copy shares cp read-only (a Reader of its own).
func (m *mirror) send(s *upstream.Server, cp *mirrorCopy) {
	defer m.inFlight.Add(-1)
	ctx, cancel := context.WithTimeout(context.Background(), mirrorTimeout)
	defer cancel()
	req := cp.req
	req.Ctx = ctx
	if len(cp.body) > 0 {
		req.Body = bytes.NewReader(cp.body)
	}
	start := time.Now()
	var resp httpclient.Response
	err := m.pool.Transport().Do(s.Addr, &req, &resp)
	if err == nil && resp.Body != nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	r := upstream.Result{Outcome: upstream.Success, Status: resp.Status, Latency: time.Since(start)}
	if err != nil {
		r.Outcome, r.ConnectFailed = upstream.Failure, httpclient.IsConnectError(err)
		m.count(mirrorFailed)
	} else {
		m.count(mirrorSent)
	}
	s.Done(r)
}
