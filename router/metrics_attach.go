package router

import (
	"time"

	"github.com/edgeway/edgeway/routes/rule"
	"github.com/edgeway/edgeway/upstream"
)

// attachMetrics gives the listeners of s their traffic counters, found by
// name in m so that they carry on across reloads.
func (s *Snapshot) attachMetrics(m *Metrics) {
	servers := map[*upstream.Server]*serverStats{}
	for name, hl := range s.http {
		hl.stats = m.listener(name)
		hl.noRoute = m.route(hl.stats, "")
		hl.routeStats = make([]*routeStats, len(hl.routes))
		for i, rt := range hl.routes {
			hl.routeStats[i] = m.route(hl.stats, rt.name)
			if rt.pool == nil {
				continue
			}
			for _, srv := range rt.pool.Servers() {
				if servers[srv] == nil {
					servers[srv] = m.server(rt.upstream, srv.Addr)
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
	d := time.Since(x.start)
	rs.requests[methodIndex(x.in.Method)][classIndex(x.logStatus())].Add(1)
	rs.duration.observe(d)
	l.stats.bytesIn.Add(uint64(x.bytesIn()))
	l.stats.bytesOut.Add(uint64(x.w.n))
	if x.server == nil {
		return
	}
	ss := l.servers[x.server]
	if ss == nil {
		return
	}
	switch {
	case x.errKind >= 0:
		ss.errors[x.errKind].Add(1)
	case x.resp.Status != 0:
		ss.requests[classIndex(x.resp.Status)].Add(1)
	}
	ss.duration.observe(time.Since(x.upStart))
}

// matchIndex returns the index of the route serving req, or -1.
func (l *httpListener) matchIndex(req *rule.HTTPRequest) int {
	if l.table == nil {
		return -1
	}
	return l.table.Match(req)
}
