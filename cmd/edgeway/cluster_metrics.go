package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/cluster"
)

// clusterCollector exports a cluster node's state and counters:
// edgeway_cluster_connected, edgeway_cluster_members,
// edgeway_cluster_resyncs_total, edgeway_cluster_last_sync_timestamp_seconds,
// edgeway_cluster_writes_failed_total and edgeway_cluster_lock_wait_seconds
// (a summary: count and sum of the time spent waiting for etcd locks).
// Each is read from the node's atomics at scrape time.
type clusterCollector struct {
	n                                           *cluster.Node
	connected, members, resyncs, lastSync, fail *prometheus.Desc
	lockWait                                    *prometheus.Desc
}

func newClusterCollector(n *cluster.Node) *clusterCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &clusterCollector{n: n,
		connected: d("edgeway_cluster_connected", "1 while this instance holds a live etcd lease session, 0 while etcd cannot be reached (it serves its last state)."),
		members:   d("edgeway_cluster_members", "Instances with a live member record in etcd, as this instance last saw them."),
		resyncs:   d("edgeway_cluster_resyncs_total", "Full re-reads of a followed etcd prefix after a broken watch, a compaction or a new session."),
		lastSync:  d("edgeway_cluster_last_sync_timestamp_seconds", "When this instance last read from etcd (a full read or a watch event), as a Unix time in seconds; 0 before the first."),
		fail:      d("edgeway_cluster_writes_failed_total", "Writes to etcd (overrides, ticket key rotations) that failed because etcd could not be reached."),
		lockWait:  d("edgeway_cluster_lock_wait_seconds", "Time spent waiting for etcd locks (one ACME order per name across the cluster)."),
	}
}

// Describe implements prometheus.Collector.
func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.connected, c.members, c.resyncs, c.lastSync, c.fail, c.lockWait} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	m := &c.n.Metrics
	connected := 0.0
	if c.n.Connected() {
		connected = 1
	}
	last := 0.0
	if ns := m.LastSync.Load(); ns > 0 {
		last = float64(ns) / float64(time.Second)
	}
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, connected)
	ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(c.n.LiveMembers()))
	ch <- prometheus.MustNewConstMetric(c.resyncs, prometheus.CounterValue, float64(m.Resyncs.Load()))
	ch <- prometheus.MustNewConstMetric(c.lastSync, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(c.fail, prometheus.CounterValue, float64(m.FailedWrites.Load()))
	ch <- prometheus.MustNewConstSummary(c.lockWait, uint64(m.LockWaits.Load()),
		float64(m.LockWaitNs.Load())/float64(time.Second), nil)
}

// registerClusterMetrics adds the cluster's metrics to /metrics.
func (d *daemon) registerClusterMetrics(n *cluster.Node) {
	if err := d.metrics.Register(newClusterCollector(n)); err != nil {
		d.log.Warn("cluster metrics not registered", "err", err)
	}
}
