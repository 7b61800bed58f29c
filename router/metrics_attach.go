package router

import (
	"time"

	"github.com/edgeway/edgeway/routes/rule"
	"github.com/edgeway/edgeway/upstream"
)

// attachMetrics gives the listeners of s their traffic counters, found by
// name in m so that they carry on across reloads, and drops from m the
// counters of routes, listeners, upstreams and servers s no longer has,
// so that their series leave /metrics with them.
func (s *Snapshot) attachMetrics(m *Metrics) {
	servers := map[*upstream.Server]*serverStats{}
	ups := map[string]*upstreamStats{}
	keep := map[serverKey]bool{}
	defer func() { m.keepOnly(s, ups, keep) }()
	for name, hl := range s.http {
		hl.upstreams = ups
		hl.stats = m.listener(name)
		hl.noRoute = m.route(hl.stats, "")
		hl.routeStats = make([]*routeStats, len(hl.routes))
		for i, rt := range hl.routes {
			hl.routeStats[i] = m.route(hl.stats, rt.name)
			for _, mr := range rt.mirrors {
				if ups[mr.upstream] == nil {
					ups[mr.upstream] = m.upstream(mr.upstream)
				}
				mr.stats = ups[mr.upstream]
			}
			for _, rt := range rt.targets() { // a split's variants
				if rt.pool == nil {
					continue
				}
				if ups[rt.upstream] == nil {
					ups[rt.upstream] = m.upstream(rt.upstream)
				}
				for _, srv := range rt.pool.Servers() {
					if servers[srv] == nil {
						servers[srv] = m.server(rt.upstream, srv.Addr)
						keep[serverKey{rt.upstream, srv.Addr}] = true
					}
				}
			}
		}
		hl.servers = servers
	}
}

// count adds the finished request to the traffic counters.
func (x *exchange) count() {
	l := x.l
	rs := l.noRoute
	if x.rtIndex >= 0 {
		rs = l.routeStats[x.rtIndex]
	}
	rs.requests[methodIndex(x.in.Method)][classIndex(x.logStatus())].Add(1)
	rs.duration.observe(time.Since(x.start))
	l.stats.bytesIn.Add(uint64(x.bytesIn()))
	l.stats.bytesOut.Add(uint64(x.w.n))
	if x.server != nil && !x.serverDone {
		x.countTry(x.errKind, x.resp.Status)
	}
}

// countTry counts one try at an upstream server: an error of kind (>= 0)
// or an answer with status.
func (x *exchange) countTry(kind, status int) {
	if x.l.stats == nil {
		return
	}
	ss := x.l.servers[x.server]
	if ss == nil {
		return
	}
	switch {
	case kind >= 0:
		ss.errors[kind].Add(1)
	case status != 0:
		ss.requests[classIndex(status)].Add(1)
	}
	ss.duration.observe(time.Since(x.upStart))
}

// countRetry counts a retry of the route's upstream.
func (x *exchange) countRetry() {
	if us := x.upstreamStats(); us != nil {
		us.retries.Add(1)
	}
}

// countLimit counts a request refused by a pool limit ("max_requests",
// "max_connections", "max_pending") or a retry not made ("retry_budget").
func (x *exchange) countLimit(limit string) {
	us := x.upstreamStats()
	switch {
	case us == nil:
	case limit == "retry_budget":
		us.budgetExhausted.Add(1)
	default:
		for i, l := range limits {
			if l == limit {
				us.overLimit[i].Add(1)
			}
		}
	}
}

func (x *exchange) upstreamStats() *upstreamStats {
	if x.l.stats == nil || x.rt == nil {
		return nil
	}
	return x.l.upstreams[x.rt.upstream]
}

// matchIndex returns the index of the route serving req, or -1.
func (l *httpListener) matchIndex(req *rule.HTTPRequest) int {
	if l.table == nil {
		return -1
	}
	return l.table.Match(req)
}
