package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/acme/acmetest"
	"github.com/edgeway/edgeway/cluster"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/etcdtest"
	"github.com/edgeway/edgeway/internal/testutil"
)

// roundRobin is a loopback TCP balancer in front of the instances: each
// new connection goes to the next backend. With sniff404 it reads the
// status line of each answer and counts the 404s (an HTTP-01 validation
// answered by an instance that did not know the token).
type roundRobin struct {
	ln       net.Listener
	backends []string
	next     atomic.Int64
	notFound atomic.Int64
	sniff404 bool
	avoid    atomic.Int64 // backend index new connections skip; -1 none

	mu      sync.Mutex
	release chan struct{} // non-nil while holding: connections wait for it
	held    int
}

// hold makes new connections wait (accepted, not forwarded) until
// unhold, which forwards them skipping backend avoid (-1: none).
func (lb *roundRobin) hold() {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.release = make(chan struct{})
}

func (lb *roundRobin) unhold(avoid int) {
	lb.avoid.Store(int64(avoid))
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if lb.release != nil {
		close(lb.release)
		lb.release = nil
	}
}

func (lb *roundRobin) heldCount() int {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.held
}

func startRoundRobin(t *testing.T, port int, sniff404 bool, backends ...string) *roundRobin {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	lb := &roundRobin{ln: ln, backends: backends, sniff404: sniff404}
	lb.avoid.Store(-1)
	t.Cleanup(func() { ln.Close() })
	go lb.serve()
	return lb
}

func (lb *roundRobin) serve() {
	for {
		c, err := lb.ln.Accept()
		if err != nil {
			return
		}
		go lb.forward(c)
	}
}

func (lb *roundRobin) forward(c net.Conn) {
	defer c.Close()
	lb.mu.Lock()
	wait := lb.release
	if wait != nil {
		lb.held++
	}
	lb.mu.Unlock()
	if wait != nil {
		<-wait
	}
	// A backend that refuses the connection (an instance not listening
	// yet, or killed) is skipped for the next one, as a balancer's
	// connect retry does; the validation fails only when none accepts.
	first := int(lb.next.Add(1)-1) % len(lb.backends)
	var b net.Conn
	for k := range len(lb.backends) {
		i := (first + k) % len(lb.backends)
		if i == int(lb.avoid.Load()) {
			continue
		}
		var err error
		if b, err = net.DialTimeout("tcp", lb.backends[i], 5*time.Second); err == nil {
			break
		}
	}
	if b == nil {
		return
	}
	defer b.Close()
	go func() { io.Copy(b, c); b.(*net.TCPConn).CloseWrite() }()
	if !lb.sniff404 {
		io.Copy(c, b)
		return
	}
	r := bufio.NewReader(b)
	line, _ := r.ReadString('\n')
	if strings.Contains(line, " 404 ") {
		lb.notFound.Add(1)
	}
	c.Write([]byte(line))
	io.Copy(c, r)
}

// clusterACME is three edgeway instances on one etcd, pebble validating
// through round-robin balancers in front of them.
type clusterACME struct {
	etcd     *etcdtest.Server
	pebble   *acmetest.Pebble
	names    []string
	insts    []*clusterInstance
	tlsAddrs []string
	lb       *roundRobin // HTTP-01 validations
	lbTLS    *roundRobin // TLS-ALPN-01 validations
	keyFile  string      // the cluster key
}

type clusterInstance struct {
	httpPort, tlsPort int
	conf              string
	proc              *testutil.Proc
}

var clusterNames = []string{"n1.cluster.test", "n2.cluster.test", "n3.cluster.test", "n4.cluster.test", "n5.cluster.test"}

func newClusterACME(t *testing.T, names []string, po ...acmetest.Options) *clusterACME {
	return newClusterACMEWith(t, "http-01", names, po...)
}

// newClusterACMEWith is newClusterACME with the acme block's challenges.
func newClusterACMEWith(t *testing.T, challenges string, names []string, po ...acmetest.Options) *clusterACME {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd, pebble and three edgeway processes")
	}
	c := &clusterACME{etcd: etcdtest.Start(t), names: names}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "cluster.key")
	c.keyFile = keyFile
	if err := os.WriteFile(keyFile, bytes.Repeat([]byte{9}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	lbHTTP, lbTLS := testutil.FreePort(t), testutil.FreePort(t)
	var o acmetest.Options
	if len(po) > 0 {
		o = po[0]
	}
	o.HTTPPort, o.TLSPort = lbHTTP, lbTLS
	c.pebble = acmetest.Start(t, o)
	up := backend(t, "cluster-site")
	var httpAddrs []string
	for i := range 3 {
		in := &clusterInstance{httpPort: testutil.FreePort(t), tlsPort: testutil.FreePort(t)}
		d := filepath.Join(dir, fmt.Sprintf("edge-%d", i))
		main := fmt.Sprintf(`
shutdown_grace 2s
log { format text; output stderr; level debug }
listen web { addr 127.0.0.1:%d; protocols http1 }
listen websecure { addr 127.0.0.1:%d; protocols tls http1 h2 }
cluster {
  etcd %s
  prefix /edgeway/e2e
  name edge-%d
  key_file %s
  lease_ttl 5s
}
tls {
  acme {
    directory %s
    ca_root %s
    storage %s
    accept_terms on
    challenges %s
    names %s
  }
}
upstream site { server %s }
route a { match PathPrefix(`+"`/`"+`); to site }
`, in.httpPort, in.tlsPort, c.etcd.Endpoints()[0], i, keyFile, c.pebble.URL, c.pebble.RootFile,
			filepath.Join(d, "acme"), challenges, strings.Join(names, " "), hostPort(up))
		testutil.WriteFiles(t, d, map[string]string{"edgeway.conf": main})
		in.conf = filepath.Join(d, "edgeway.conf")
		c.insts = append(c.insts, in)
		httpAddrs = append(httpAddrs, fmt.Sprintf("127.0.0.1:%d", in.httpPort))
		c.tlsAddrs = append(c.tlsAddrs, fmt.Sprintf("127.0.0.1:%d", in.tlsPort))
	}
	c.lb = startRoundRobin(t, lbHTTP, true, httpAddrs...)
	c.lbTLS = startRoundRobin(t, lbTLS, false, c.tlsAddrs...)
	t.Setenv("EDGEWAY_ACME_RETRY_MIN", "500ms")
	return c
}

// start starts the three instances at once.
func (c *clusterACME) start(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	for _, in := range c.insts {
		wg.Go(func() { in.proc = testutil.Start(t, in.conf) })
	}
	wg.Wait()
}

func (c *clusterACME) logs() string {
	var b strings.Builder
	for i, in := range c.insts {
		fmt.Fprintf(&b, "--- edge-%d\n%s", i, in.proc.Log())
	}
	return b.String() + "--- pebble\n" + c.pebble.Log()
}

// acmeDigest is the instances' and pebble's lines about ACME, a short
// view to print ahead of the whole logs (which a CI log may cut).
func (c *clusterACME) acmeDigest() string {
	var b strings.Builder
	pick := func(who, log string) {
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "acme") || strings.Contains(line, "challenge") {
				fmt.Fprintf(&b, "%s: %s\n", who, line)
			}
		}
	}
	for i, in := range c.insts {
		pick(fmt.Sprintf("edge-%d", i), in.proc.Log())
	}
	pick("pebble", c.pebble.Log())
	return b.String()
}

func (c *clusterACME) orders() int { return strings.Count(c.pebble.Log(), "POST /order-plz") }

// replaced counts the orders the CA itself made impossible to resume: a
// journaled order pebble marked invalid (a validation that failed, as a
// loaded machine's slow accept can make it) is replaced by a new one, the
// one case where the issue allows a second order for a name, explained.
func (c *clusterACME) replaced(t *testing.T) int {
	n := 0
	for _, in := range c.insts {
		n += strings.Count(in.proc.Log(), "the journaled order cannot be resumed; placing a new order")
	}
	if n > 0 {
		t.Logf("%d journaled orders invalid at the CA, replaced by new ones", n)
	}
	return n
}

// waitSameSerials waits until every instance but skip (-1: none) serves,
// for each name, a pebble certificate with one serial, and returns the
// serials by name.
func (c *clusterACME) waitSameSerials(t *testing.T, skip int, timeout time.Duration) map[string]string {
	t.Helper()
	roots, _ := c.pebble.Roots(t)
	leafAt := func(addr, name string) *x509.Certificate {
		d := &net.Dialer{Timeout: 3 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots})
		if err != nil {
			return nil
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	serials := map[string]string{}
	testutil.Eventually(t, timeout, func() bool {
		for _, name := range c.names {
			var first *x509.Certificate
			for i, addr := range c.tlsAddrs {
				if i == skip {
					continue
				}
				l := leafAt(addr, name)
				if l == nil || first != nil && l.SerialNumber.Cmp(first.SerialNumber) != 0 {
					return false
				}
				first = l
			}
			serials[name] = first.SerialNumber.String()
		}
		return true
	}, "not every instance serves one pebble certificate per name; logs:\n%s", c.logs())
	return serials
}

// checkSealed reads every value in etcd under the cluster's prefix: none
// holds a private key or a ticket key in clear, and the account key and
// each name's key are there (clusterCheckSealed, through a node of the
// cluster that can open the ticket key record).
func (c *clusterACME) checkSealed(t *testing.T) {
	t.Helper()
	n, err := cluster.Start(context.Background(), conf.Cluster{Etcd: c.etcd.Endpoints(), Prefix: "/edgeway/e2e", Name: "checker",
		KeyFile: c.keyFile, LeaseTTL: 5 * time.Second}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("cluster.Start: %v", err)
	}
	defer n.Close()
	clusterCheckSealed(t, n, len(c.names)+1)
}

// TestClusterACMEOneOrderPerName: three instances on one etcd start at
// once with five names; pebble validates through a round-robin balancer,
// so most validations reach an instance that did not order. Exactly five
// orders reach pebble, no validation is answered 404, every instance
// serves the same certificate for each name, and no value in etcd holds
// a private key in clear.
func TestClusterACMEOneOrderPerName(t *testing.T) {
	c := newClusterACME(t, clusterNames)
	began := time.Now()
	c.start(t)
	c.waitSameSerials(t, -1, 120*time.Second)
	t.Logf("%d names issued and served by all 3 instances in %v; %d validations through the HTTP balancer",
		len(c.names), time.Since(began), c.lb.next.Load())
	if n := c.orders(); n != len(c.names)+c.replaced(t) {
		t.Errorf("%d orders at pebble, want exactly %d (one per name across the cluster); logs:\n%s", n, len(c.names), c.logs())
	}
	if n := c.lb.notFound.Load(); n != 0 {
		t.Errorf("%d HTTP-01 validations answered 404 by an instance", n)
	}
	if c.lb.next.Load() < int64(len(c.names)) {
		t.Errorf("only %d validations went through the balancer", c.lb.next.Load())
	}
	c.checkSealed(t)
}

// TestClusterACMEKillOrdererMidOrder: pebble's validations are held at
// the balancer; the instance that ordered the first name is killed
// (SIGKILL) while its validation waits, then the held validations go to
// the survivors. The survivor that takes the lock (lease_ttl later)
// resumes the journaled order: still exactly one order per name at
// pebble, no 404, and both survivors serve one serial per name.
func TestClusterACMEKillOrdererMidOrder(t *testing.T) {
	c := newClusterACME(t, clusterNames[:1])
	c.lb.hold()
	c.start(t)
	testutil.Eventually(t, 60*time.Second, func() bool { return c.lb.heldCount() > 0 },
		"no validation reached the balancer; logs:\n%s", c.logs())
	orderer := -1
	for i, in := range c.insts {
		if strings.Contains(in.proc.Log(), `"acme: ordering a certificate" name=`+c.names[0]) {
			orderer = i
		}
	}
	if orderer < 0 {
		t.Fatalf("no instance logged the order; logs:\n%s", c.logs())
	}
	killed := time.Now()
	c.insts[orderer].proc.Cmd.Process.Kill()
	c.insts[orderer].proc.Wait(t, 10*time.Second)
	c.lb.unhold(orderer)
	c.waitSameSerials(t, orderer, 5*time.Second+60*time.Second)
	t.Logf("edge-%d killed mid-order; survivors serve the certificate %v after the kill", orderer, time.Since(killed))
	if n := c.orders(); n != 1 {
		t.Errorf("%d orders at pebble after the orderer was killed, want 1 (the journaled order resumed); logs:\n%s", n, c.logs())
	}
	resumed := false
	for i, in := range c.insts {
		if i != orderer && strings.Contains(in.proc.Log(), "acme: resuming the journaled order") {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("no survivor resumed the journaled order; logs:\n%s", c.logs())
	}
	if n := c.lb.notFound.Load(); n != 0 {
		t.Errorf("%d HTTP-01 validations answered 404 by a survivor", n)
	}
	c.checkSealed(t)
}

// TestClusterACMERenewalServedByAll: with certificates that live 30s,
// one instance renews (the first whose renewal comes due, under the
// lock); the others serve the renewed certificate from their watch
// without ordering: one renewal order at pebble, and every instance
// serves the new serial.
func TestClusterACMERenewalServedByAll(t *testing.T) {
	c := newClusterACME(t, clusterNames[:1], acmetest.Options{Validity: 30 * time.Second})
	c.start(t)
	first := c.waitSameSerials(t, -1, 60*time.Second)
	testutil.Eventually(t, 90*time.Second, func() bool { return c.orders() >= 2 },
		"no renewal order; logs:\n%s", c.logs())
	began := time.Now()
	var renewed map[string]string
	testutil.Eventually(t, 60*time.Second, func() bool {
		renewed = c.waitSameSerials(t, -1, 30*time.Second)
		return renewed[c.names[0]] != first[c.names[0]]
	}, "the instances do not all serve the renewed certificate; logs:\n%s", c.logs())
	t.Logf("renewed certificate served by all 3 instances %v after pebble saw the renewal order (polled)", time.Since(began))
	// With certificates that live 30s, pebble's renewal information may
	// ask for the next renewal as soon as one is issued, so more orders
	// can follow while the test looks: what holds is that each is placed
	// by one instance, under the name's lock, never two at a time, and
	// none that no instance logged.
	n := c.orders()
	if logged := c.checkOrdersSerial(t); n > logged || n < 2 {
		t.Errorf("%d orders at pebble, %d logged by the instances, want at least 2 (the first issuance and the renewal), all logged; logs:\n%s", n, logged, c.logs())
	}
}

// checkOrdersSerial reads the instances' logs for the orders they placed
// and reports an order placed while another instance's was in progress
// (between its "ordering a certificate" and its certificate served as
// issued, or its failure); it returns the orders logged.
func (c *clusterACME) checkOrdersSerial(t *testing.T) int {
	t.Helper()
	type event struct {
		at    time.Time
		inst  int
		start bool
	}
	var evs []event
	stamp := regexp.MustCompile(`^time=(\S+) `)
	for i, in := range c.insts {
		for _, line := range strings.Split(in.proc.Log(), "\n") {
			m := stamp.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				continue
			}
			switch {
			case strings.Contains(line, `msg="acme: ordering a certificate"`):
				evs = append(evs, event{at, i, true})
			case strings.Contains(line, `msg="acme: certificate served"`) && strings.Contains(line, "how=issued"),
				strings.Contains(line, `msg="acme: order failed`), strings.Contains(line, `msg="acme: challenge failed`):
				evs = append(evs, event{at, i, false})
			}
		}
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].at.Before(evs[b].at) })
	open, orders := -1, 0
	for _, e := range evs {
		switch {
		case e.start && open >= 0 && open != e.inst:
			t.Errorf("edge-%d placed an order at %s while edge-%d's was in progress", e.inst, e.at.Format(time.StampMicro), open)
		case e.start:
			open = e.inst
			orders++
		case e.inst == open:
			open = -1
		}
	}
	return orders
}

// TestClusterACMETLSALPN01ViaLB: as TestClusterACMEOneOrderPerName with
// TLS-ALPN-01 through an L4 balancer: validations reaching an instance
// that did not order are answered with the certificate the orderer put
// in etcd. Exactly one order per name.
func TestClusterACMETLSALPN01ViaLB(t *testing.T) {
	c := newClusterACMEWith(t, "tls-alpn-01", clusterNames[:3])
	c.start(t)
	c.waitSameSerials(t, -1, 120*time.Second)
	if n := c.orders(); n != len(c.names) {
		t.Errorf("%d orders at pebble, want exactly %d; ACME lines:\n%s\nlogs:\n%s", n, len(c.names), c.acmeDigest(), c.logs())
	}
	if n := c.lbTLS.next.Load(); n < int64(len(c.names)) {
		t.Errorf("only %d validations went through the TLS balancer", n)
	}
	if strings.Contains(c.pebble.Log(), "urn:ietf:params:acme:error:tls") {
		t.Errorf("a TLS-ALPN-01 validation failed; ACME lines:\n%s\nlogs:\n%s", c.acmeDigest(), c.logs())
	}
}
