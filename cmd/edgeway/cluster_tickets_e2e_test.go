package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeway/edgeway/cluster"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

// clusterTLSMain gives each trio instance a TLS listener with a
// self-signed certificate for site.test.
const clusterTLSMain = `
tls { self_signed site.test }
listen websecure {
  addr 127.0.0.1:0
  protocols tls http1
}
`

// clusterTLSAddrs returns each instance's websecure address.
func (c *clusterTrio) clusterTLSAddrs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, e := range c.inst {
		out = append(out, e.p.Addrs(t, 2)["websecure"])
	}
	return out
}

// clusterOneTicket is a client session cache that keeps the first ticket
// it is given and offers it on every handshake, so that one ticket can be
// tried on several instances (a real cache replaces it on each
// resumption).
type clusterOneTicket struct {
	mu sync.Mutex
	s  *tls.ClientSessionState
}

func (c *clusterOneTicket) Get(string) (*tls.ClientSessionState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s, c.s != nil
}

func (c *clusterOneTicket) Put(_ string, s *tls.ClientSessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil && s != nil {
		c.s = s
	}
}

func (c *clusterOneTicket) has() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s != nil
}

// clusterTLSGet makes one HTTPS request to addr for site.test with cache
// and reports whether the handshake resumed. Reading the answer makes the
// client take in the TLS 1.3 tickets the server sends after the handshake.
func clusterTLSGet(t *testing.T, addr string, version uint16, cache tls.ClientSessionCache) bool {
	t.Helper()
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: "site.test", InsecureSkipVerify: true,
		MinVersion: version, MaxVersion: version, ClientSessionCache: cache})
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET over TLS to %s: %v", addr, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c.ConnectionState().DidResume
}

// clusterTicketNode joins the trio's cluster in process, as a fourth
// member that only rotates the ticket keys.
func (c *clusterTrio) clusterTicketNode(t *testing.T, ccfg conf.Cluster) (*cluster.Node, *cluster.TicketKeys) {
	t.Helper()
	ccfg.Prefix, ccfg.Name, ccfg.KeyFile, ccfg.LeaseTTL = "/edgeway/e2e", "rotator", c.key, 5*time.Second
	if ccfg.Etcd == nil {
		ccfg.Etcd = c.etcd.Endpoints()
	}
	n, err := cluster.Start(context.Background(), ccfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("cluster.Start: %v", err)
	}
	t.Cleanup(n.Close)
	return n, n.TicketKeys(time.Hour, "", func([][32]byte) {})
}

// TestClusterTicketResumption: a session ticket issued by any instance
// resumes on the other two, every time (TLS 1.2 and 1.3), including
// tickets issued before two rotations made by another member; a third
// rotation retires the oldest key on every instance; and the ticket keys
// are sealed in etcd.
func TestClusterTicketResumption(t *testing.T) {
	c, _ := startClusterTrioWith(t, clusterTrioOptions{main: clusterTLSMain})
	addrs := c.clusterTLSAddrs(t)
	// The instances agree on the keys once the first record is read.
	testutil.Eventually(t, 30*time.Second, func() bool {
		cache := &clusterOneTicket{}
		clusterTLSGet(t, addrs[0], tls.VersionTLS13, cache)
		return cache.has() && clusterTLSGet(t, addrs[1], tls.VersionTLS13, cache) && clusterTLSGet(t, addrs[2], tls.VersionTLS13, cache)
	}, "a ticket from e1 resumes on e2 and e3")

	tries, resumed := 0, 0
	check := func(what string, version uint16, from int, cache *clusterOneTicket) {
		for j := range addrs {
			if j == from {
				continue
			}
			tries++
			if clusterTLSGet(t, addrs[j], version, cache) {
				resumed++
			} else {
				t.Errorf("%s: a TLS %x ticket from e%d did not resume on e%d", what, version, from+1, j+1)
			}
		}
	}
	type issued struct {
		cache   *clusterOneTicket
		version uint16
	}
	var old []issued
	for i := range 12 {
		from, version := i%3, uint16(tls.VersionTLS13)
		if i%2 == 1 {
			version = tls.VersionTLS12
		}
		cache := &clusterOneTicket{}
		if clusterTLSGet(t, addrs[from], version, cache) {
			t.Fatalf("a fresh session cache resumed")
		}
		if !cache.has() {
			t.Fatalf("e%d issued no TLS %x ticket", from+1, version)
		}
		check("before rotation", version, from, cache)
		if i < 3 {
			old = append(old, issued{cache, version})
		}
	}

	n, tk := c.clusterTicketNode(t, conf.Cluster{})
	for r := range 2 {
		testutil.Eventually(t, 20*time.Second, func() bool {
			ok, err := tk.Rotate(context.Background())
			return err == nil && ok
		}, "rotation %d by a fourth member", r+1)
	}
	for i, o := range old {
		check("a ticket from before two rotations", o.version, i%3, o.cache)
	}
	for i := range 6 {
		from := i % 3
		cache := &clusterOneTicket{}
		clusterTLSGet(t, addrs[from], tls.VersionTLS13, cache)
		check("after two rotations", tls.VersionTLS13, from, cache)
	}
	t.Logf("cross-instance resumption: %d of %d handshakes resumed", resumed, tries)
	// A third rotation drops the key that sealed the first tickets: every
	// instance follows it (their keys are the cluster's, not their own).
	testutil.Eventually(t, 20*time.Second, func() bool {
		ok, err := tk.Rotate(context.Background())
		return err == nil && ok
	}, "rotation 3 by a fourth member")
	for j, addr := range addrs {
		testutil.Eventually(t, 20*time.Second, func() bool {
			return !clusterTLSGet(t, addr, old[0].version, old[0].cache)
		}, "e%d no longer resumes a ticket sealed three rotations ago", j+1)
	}
	clusterCheckSealed(t, n, 0)
}

// clusterCheckSealed reads every value under the cluster's prefix through
// n's client: none holds a PEM private key, or a ticket key in clear (raw,
// hex or base64); the ticket key record is there and n opens it. wantKeys
// is how many ACME private keys (.key values) must be there at least.
func clusterCheckSealed(t *testing.T, n *cluster.Node, wantKeys int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := n.Client().Get(ctx, n.Prefix()+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var secrets [][]byte
	keys := 0
	for _, kv := range res.Kvs {
		if string(kv.Key) != n.Key("tls", "ticket-keys") {
			if strings.HasSuffix(string(kv.Key), ".key") {
				keys++
			}
			continue
		}
		plain, err := n.Open(kv.Value)
		if err != nil {
			t.Fatalf("the ticket key record does not open with the cluster key: %v", err)
		}
		var rec struct {
			Keys [][32]byte `json:"keys"`
		}
		if err := json.Unmarshal(plain, &rec); err != nil || len(rec.Keys) < 2 {
			t.Fatalf("ticket key record: %v, %d keys", err, len(rec.Keys))
		}
		for _, k := range rec.Keys {
			secrets = append(secrets, bytes.Clone(k[:]), []byte(hex.EncodeToString(k[:])),
				[]byte(base64.StdEncoding.EncodeToString(k[:])), []byte(base64.RawURLEncoding.EncodeToString(k[:])))
		}
	}
	if secrets == nil {
		t.Fatalf("no ticket key record among the %d values under %s", len(res.Kvs), n.Prefix())
	}
	for _, kv := range res.Kvs {
		if bytes.Contains(kv.Value, []byte("PRIVATE KEY")) {
			t.Errorf("%s holds a private key in clear", kv.Key)
		}
		for _, s := range secrets {
			if bytes.Contains(kv.Value, s) {
				t.Errorf("%s holds a ticket key in clear", kv.Key)
			}
		}
	}
	if keys < wantKeys {
		t.Errorf("%d key values in etcd, want at least %d", keys, wantKeys)
	}
	t.Logf("%d values under %s read: no private key or ticket key in clear", len(res.Kvs), n.Prefix())
}
