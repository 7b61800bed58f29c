package syscheck

import (
	"fmt"
	"io/fs"
	"strings"
)

// env holds what the rules derive from Params once.
type env struct {
	conns uint64
	// fds is 2×conns + 1024: one descriptor per client socket, one per
	// upstream socket beside it, and 1024 for listeners, epoll, log and
	// configuration files, and the upstream pools' idle connections
	// (docs/tuning.md).
	fds uint64
	// acceptQueue is max(min(conns, max(4096, min(65535, conns/16))),
	// largest listener backlog). 4096 is the kernel's default somaxconn
	// since Linux 5.4; the material uses 65535 for about a million
	// connections, which conns/16 reaches there: after a restart or a
	// failover every client reconnects at once, and the queue has to hold
	// the burst while the accept loops catch up. The burst is never more
	// than conns, so a smaller machine's defaults cap nothing. A
	// listener's backlog above somaxconn is silently cut down to it
	// (docs/tuning.md).
	acceptQueue uint64
	// udpRecv and udpSend are the largest UDP buffers an HTTP/3 listener
	// asks for (0: none serves HTTP/3).
	udpRecv, udpSend uint64
	// tcpMemPages is conns × 4 KiB in pages of net.ipv4.tcp_mem: a busy
	// connection holds at least a page of socket buffer, and past the
	// third tcp_mem value the kernel refuses buffer memory ("TCP: out of
	// memory"), so that value has to cover one page per connection.
	tcpMemPages uint64
}

func newEnv(sys System, p Params) env {
	n := uint64(max(p.Connections, 1))
	e := env{conns: n, fds: 2*n + 1024, acceptQueue: min(n, max(4096, min(65535, n/16)))}
	for _, l := range p.Listeners {
		e.acceptQueue = max(e.acceptQueue, uint64(max(l.Backlog, 0)))
		e.udpRecv = max(e.udpRecv, uint64(max(l.UDPRecvBuffer, 0)))
		e.udpSend = max(e.udpSend, uint64(max(l.UDPSendBuffer, 0)))
	}
	page := uint64(sys.PageSize)
	if page == 0 {
		page = 4096
	}
	e.tcpMemPages = (n*4096 + page - 1) / page
	return e
}

// verdict is a rule's judgement of the values read.
type verdict struct {
	need string // the Needed column
	ok   bool
	fix  string // the command that meets the need
}

// rule is one sysctl and what the connections need of it.
type rule struct {
	key string // sysctl key; its file is the key with dots as slashes
	// hard: a value short of the need caps the connections or their
	// accept rate (LOW, exit 1). Otherwise the rule is advice (info).
	hard bool
	// missing is the Current text when the file is absent; "" means
	// "not present".
	missing string
	// fields is how many numbers the file holds; 0 means 1.
	fields int
	eval   func(key string, v []uint64, e env) verdict
}

// rules is the table check-system prints, after the fd limit. Hard rules
// bound how many connections can be open or how fast they are accepted;
// the advice rules come from the same material but only cost latency or
// upstream churn when ignored.
var rules = []rule{
	// RLIMIT_NOFILE cannot be raised above fs.nr_open.
	{key: "fs.nr_open", hard: true, eval: atLeast(func(e env) uint64 { return e.fds })},
	// The system-wide count of open files; edgeway's descriptors are
	// part of it.
	{key: "fs.file-max", hard: true, eval: atLeast(func(e env) uint64 { return e.fds })},
	// Caps every listen backlog; see env.acceptQueue.
	{key: "net.core.somaxconn", hard: true, eval: atLeast(func(e env) uint64 { return e.acceptQueue })},
	// The half-open (SYN_RECV) queue under a connection burst; it has to
	// be as deep as the accept queue behind it.
	{key: "net.ipv4.tcp_max_syn_backlog", hard: true, eval: atLeast(func(e env) uint64 { return e.acceptQueue })},
	// See env.tcpMemPages.
	{key: "net.ipv4.tcp_mem", hard: true, fields: 3, eval: tcpMem},
	// Each client connection and its upstream connection are two
	// conntrack entries; a full table drops new connections. Without the
	// module nothing is tracked, which is fine.
	{key: "net.netfilter.nf_conntrack_max", hard: true, missing: "not loaded",
		eval: atLeast(func(e env) uint64 { return 2 * e.conns })},

	// Advice. Source ports for upstream connections: one source address
	// can hold at most width connections to one upstream host:port. The
	// pools keep few connections per server, so this is a note.
	{key: "net.ipv4.ip_local_port_range", fields: 2, eval: portRange},
	// Reuse TIME_WAIT ports for new upstream connections (2, the default,
	// does it on loopback only); it needs tcp_timestamps.
	{key: "net.ipv4.tcp_tw_reuse", eval: exactly(1)},
	{key: "net.ipv4.tcp_timestamps", eval: exactly(1)},
	// FIN_WAIT_2 lifetime; the material halves the default 60 s.
	{key: "net.ipv4.tcp_fin_timeout", eval: atMost(30)},
	// Overflowing the TIME_WAIT table only drops TIME_WAIT early (and is
	// logged), so this is advice.
	{key: "net.ipv4.tcp_max_tw_buckets", eval: atLeast(func(env) uint64 { return 131072 })},
	// Packets queued per CPU before the stack; depends on packet rate,
	// not on the number of connections.
	{key: "net.core.netdev_max_backlog", eval: atLeast(func(env) uint64 { return 16384 })},
	// Ceilings for SO_RCVBUF/SO_SNDBUF. TCP sockets autotune within
	// tcp_rmem/tcp_wmem, so these cap nothing there; an HTTP/3 listener's
	// UDP socket asks for its buffers, and a lower ceiling caps them (the
	// listener warns at start, naming the same sysctl).
	{key: "net.core.rmem_max", eval: udpBuffer(func(e env) uint64 { return e.udpRecv })},
	{key: "net.core.wmem_max", eval: udpBuffer(func(e env) uint64 { return e.udpSend })},
	// TCP Fast Open: 1 client, 2 server, 3 both.
	{key: "net.ipv4.tcp_fastopen", eval: exactly(3)},
	// A swapped-out proxy stalls every connection it holds.
	{key: "vm.swappiness", eval: atMost(10)},
}

func (r rule) check(fsys fs.FS, e env) Result {
	res := Result{Setting: r.key, Status: Info}
	v, err := readValues(fsys, r.key)
	if want := max(r.fields, 1); err == nil && len(v) != want {
		err = fmt.Errorf("%d values, expected %d", len(v), want)
	}
	if err != nil {
		missing := r.missing
		if missing == "" {
			missing = "not present"
		}
		res.Current = unreadable(err, missing)
		res.Needed = r.eval(r.key, nil, e).need
		return res
	}
	res.Current = join(v)
	vd := r.eval(r.key, v, e)
	res.Needed = vd.need
	switch {
	case vd.ok:
		res.Status = OK
	case r.hard:
		res.Status = Low
		res.Fix = vd.fix
	default:
		res.Fix = vd.fix
	}
	return res
}

// The eval functions are called with v == nil to get the need alone.

func atLeast(want func(env) uint64) func(string, []uint64, env) verdict {
	return func(key string, v []uint64, e env) verdict {
		w := want(e)
		return verdict{need: fmt.Sprintf(">= %d", w), ok: len(v) > 0 && v[0] >= w, fix: sysctl(key, w)}
	}
}

func atMost(limit uint64) func(string, []uint64, env) verdict {
	return func(key string, v []uint64, _ env) verdict {
		return verdict{need: fmt.Sprintf("<= %d", limit), ok: len(v) > 0 && v[0] <= limit, fix: sysctl(key, limit)}
	}
}

func exactly(want uint64) func(string, []uint64, env) verdict {
	return func(key string, v []uint64, _ env) verdict {
		return verdict{need: fmt.Sprint(want), ok: len(v) > 0 && v[0] == want, fix: sysctl(key, want)}
	}
}

// udpBuffer is atLeast the size want returns, or any value when that is
// 0 (no HTTP/3 listener).
func udpBuffer(want func(env) uint64) func(string, []uint64, env) verdict {
	return func(key string, v []uint64, e env) verdict {
		if want(e) == 0 {
			return verdict{need: "any (no h3)", ok: true}
		}
		return atLeast(want)(key, v, e)
	}
}

func tcpMem(key string, v []uint64, e env) verdict {
	vd := verdict{need: fmt.Sprintf("max >= %d pages", e.tcpMemPages)}
	if v == nil {
		return vd
	}
	vd.ok = v[2] >= e.tcpMemPages
	vd.fix = sysctl(key, join([]uint64{min(v[0], e.tcpMemPages), min(v[1], e.tcpMemPages), e.tcpMemPages}))
	return vd
}

func portRange(key string, v []uint64, e env) verdict {
	want := min(e.conns, 64512) // 1024-65535 is as wide as it gets
	vd := verdict{need: fmt.Sprintf("%d ports wide", want), fix: sysctl(key, "1024 65535")}
	if v != nil && v[1] >= v[0] {
		vd.ok = v[1]-v[0]+1 >= want
	}
	return vd
}

func sysctl(key string, value any) string {
	s := fmt.Sprint(value)
	if strings.Contains(s, " ") {
		s = `"` + s + `"`
	}
	return fmt.Sprintf("sysctl -w %s=%s", key, s)
}

func join(v []uint64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}
