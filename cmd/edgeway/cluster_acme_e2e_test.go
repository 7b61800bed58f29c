package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeway/edgeway/acme/acmetest"
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
}

func startRoundRobin(t *testing.T, port int, sniff404 bool, backends ...string) *roundRobin {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	lb := &roundRobin{ln: ln, backends: backends, sniff404: sniff404}
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
	to := lb.backends[int(lb.next.Add(1)-1)%len(lb.backends)]
	b, err := net.DialTimeout("tcp", to, 5*time.Second)
	if err != nil {
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

// TestClusterACMEOneOrderPerName: three instances on one etcd start at
// once with five names; pebble validates through a round-robin balancer,
// so most validations reach an instance that did not order. Exactly five
// orders reach pebble, no validation is answered 404, every instance
// serves the same certificate for each name, and no value in etcd holds
// a private key in clear.
func TestClusterACMEOneOrderPerName(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, pebble and three edgeway processes")
	}
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "cluster.key")
	if err := os.WriteFile(keyFile, bytes.Repeat([]byte{9}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	lbHTTP, lbTLS := testutil.FreePort(t), testutil.FreePort(t)
	pebble := acmetest.Start(t, acmetest.Options{HTTPPort: lbHTTP, TLSPort: lbTLS})
	names := []string{"n1.cluster.test", "n2.cluster.test", "n3.cluster.test", "n4.cluster.test", "n5.cluster.test"}
	up := backend(t, "cluster-site")
	type instance struct {
		httpPort, tlsPort int
		conf              string
		proc              *testutil.Proc
	}
	var insts []*instance
	var httpAddrs, tlsAddrs []string
	for i := range 3 {
		in := &instance{httpPort: testutil.FreePort(t), tlsPort: testutil.FreePort(t)}
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
    challenges http-01
    names %s
  }
}
upstream site { server %s }
route a { match PathPrefix(`+"`/`"+`); to site }
`, in.httpPort, in.tlsPort, etcd.Endpoints()[0], i, keyFile, pebble.URL, pebble.RootFile,
			filepath.Join(d, "acme"), strings.Join(names, " "), hostPort(up))
		testutil.WriteFiles(t, d, map[string]string{"edgeway.conf": main})
		in.conf = filepath.Join(d, "edgeway.conf")
		insts = append(insts, in)
		httpAddrs = append(httpAddrs, fmt.Sprintf("127.0.0.1:%d", in.httpPort))
		tlsAddrs = append(tlsAddrs, fmt.Sprintf("127.0.0.1:%d", in.tlsPort))
	}
	lb := startRoundRobin(t, lbHTTP, true, httpAddrs...)
	startRoundRobin(t, lbTLS, false, tlsAddrs...)
	t.Setenv("EDGEWAY_ACME_RETRY_MIN", "500ms")
	var wg sync.WaitGroup
	for _, in := range insts {
		wg.Go(func() { in.proc = testutil.Start(t, in.conf) })
	}
	wg.Wait()
	logs := func() string {
		var b strings.Builder
		for i, in := range insts {
			fmt.Fprintf(&b, "--- edge-%d\n%s", i, in.proc.Log())
		}
		return b.String() + "--- pebble\n" + pebble.Log()
	}

	roots, _ := pebble.Roots(t)
	leafAt := func(addr, name string) *x509.Certificate {
		d := &net.Dialer{Timeout: 3 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots})
		if err != nil {
			return nil
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	began := time.Now()
	testutil.Eventually(t, 120*time.Second, func() bool {
		for _, name := range names {
			var first *x509.Certificate
			for _, addr := range tlsAddrs {
				l := leafAt(addr, name)
				if l == nil || first != nil && l.SerialNumber.Cmp(first.SerialNumber) != 0 {
					return false
				}
				first = l
			}
		}
		return true
	}, "not every instance serves one pebble certificate per name; logs:\n%s", logs())
	t.Logf("5 names issued and served by all 3 instances in %v; %d connections through the HTTP balancer",
		time.Since(began), lb.next.Load())
	if n := strings.Count(pebble.Log(), "POST /order-plz"); n != len(names) {
		t.Errorf("%d orders at pebble, want exactly %d (one per name across the cluster); logs:\n%s", n, len(names), logs())
	}
	if n := lb.notFound.Load(); n != 0 {
		t.Errorf("%d HTTP-01 validations answered 404 by an instance", n)
	}
	if lb.next.Load() < int64(len(names)) {
		t.Errorf("only %d validations went through the balancer", lb.next.Load())
	}

	// Every value in etcd, read raw: no private key in clear.
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cli.Get(ctx, "", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	certs := 0
	for _, kv := range res.Kvs {
		if strings.Contains(string(kv.Key), "/acme/") && strings.HasSuffix(string(kv.Key), ".key") {
			certs++
		}
		if bytes.Contains(kv.Value, []byte("PRIVATE KEY")) {
			t.Errorf("%s holds a private key in clear", kv.Key)
		}
	}
	if certs < len(names)+1 { // the account key and one per name
		t.Errorf("%d key values in etcd, want at least %d", certs, len(names)+1)
	}
}
