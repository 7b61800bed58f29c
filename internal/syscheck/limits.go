package syscheck

import "fmt"

// checkNoFile compares the hard RLIMIT_NOFILE with env.fds. The hard limit
// is the one that counts: since Go 1.19 a Go program raises its soft limit
// to the hard one when it starts, so edgeway gets the hard limit whatever
// the soft one is.
func checkNoFile(noFile func() (uint64, uint64, error), e env) Result {
	res := Result{Setting: "ulimit -n", Needed: fmt.Sprintf(">= %d", e.fds), Status: Info}
	if noFile == nil {
		res.Current = "unreadable"
		return res
	}
	_, hard, err := noFile()
	if err != nil {
		res.Current = "unreadable: " + err.Error()
		return res
	}
	res.Current = fmt.Sprintf("%d (hard)", hard)
	if hard >= e.fds {
		res.Status = OK
		return res
	}
	res.Status = Low
	res.Fix = fmt.Sprintf("ulimit -n %d (systemd: LimitNOFILE=%d)", e.fds, e.fds)
	return res
}

// checkBacklog compares a listener's backlog with somaxconn, which cuts
// it down silently.
func checkBacklog(l Listener, somaxconn []uint64, err error) Result {
	res := Result{Setting: "listener " + l.Name + " backlog", Status: OK}
	if l.Backlog <= 0 {
		res.Current, res.Needed = "default", "- (somaxconn)"
		return res
	}
	res.Current = fmt.Sprint(l.Backlog)
	res.Needed = fmt.Sprintf("somaxconn >= %d", l.Backlog)
	switch {
	case err != nil || len(somaxconn) == 0:
		res.Status = Info
	case somaxconn[0] < uint64(l.Backlog):
		res.Status = Low
		res.Current = fmt.Sprintf("%d (cut to %d)", l.Backlog, somaxconn[0])
		res.Fix = sysctl("net.core.somaxconn", l.Backlog)
	}
	return res
}

// checkReusePort says whether a listener sets SO_REUSEPORT, which lets
// several accept loops (or a second edgeway during an upgrade) share the
// port, the kernel hashing connections across them.
func checkReusePort(l Listener) Result {
	res := Result{Setting: "listener " + l.Name + " reuseport", Needed: "on", Status: OK, Current: "on"}
	if !l.ReusePort {
		res.Current, res.Status = "off", Info
		res.Fix = "reuseport on (in listen " + l.Name + ")"
	}
	return res
}
