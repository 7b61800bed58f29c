// Package acmetest runs pebble, Let's Encrypt's test ACME server, for the
// tests of package acme and of edgeway's ACME integration: on loopback,
// with its own HTTPS certificate, pebble-challtestsrv as its DNS server
// answering 127.0.0.1 for every name, and its challenge ports pointed at
// the listeners under test.
package acmetest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// Options configure StartPebble.
type Options struct {
	// HTTPPort and TLSPort are where pebble validates HTTP-01 and
	// TLS-ALPN-01 challenges on 127.0.0.1 (the listeners under test).
	HTTPPort, TLSPort int
	// Validity is the lifetime of issued certificates; default pebble's
	// (about 5 years).
	Validity time.Duration
	// Port is pebble's own port; 0 picks a free one.
	Port int
	// Blocklist are names pebble refuses to order (rejectedIdentifier).
	Blocklist []string
}

// Pebble is a running pebble.
type Pebble struct {
	// Dir holds the configuration and the HTTPS certificate's files.
	Dir string
	// URL is the directory URL; RootFile the PEM CA of pebble's HTTPS
	// certificate (for ca_root), and HTTPS an http.Client that trusts it.
	URL      string
	RootFile string
	HTTPS    *http.Client
	mgmt     string
	t        testing.TB

	mu  sync.Mutex
	cmd *exec.Cmd
	log *lockedBuffer
}

// PebbleModule is the pebble release `make tools` installs into bin/tools
// (the Makefile's PEBBLE names the same one).
const PebbleModule = "github.com/letsencrypt/pebble/v2/cmd/...@v2.10.3"

// Require fails the test when pebble or pebble-challtestsrv cannot be
// found (see binary), naming the command that installs them.
func Require(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"pebble", "pebble-challtestsrv"} {
		binary(t, bin)
	}
}

// binary finds one of pebble's commands: in bin/tools, where `make tools`
// (run by `make test`) installs them, then on $PATH.
func binary(t testing.TB, name string) string {
	t.Helper()
	if p := filepath.Join(testutil.ModuleRoot(t), "bin", "tools", name); isFile(p) {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Fatalf("%s not found in bin/tools or $PATH: run `make tools` (GOBIN=bin/tools go install %s)", name, PebbleModule)
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Start starts pebble-challtestsrv and pebble and waits until pebble's
// directory answers; both stop when the test ends.
func Start(t testing.TB, o Options) *Pebble {
	t.Helper()
	Require(t)
	dir := t.TempDir()
	ca := testutil.NewCA(t, "pebble HTTPS test CA")
	certPEM, keyPEM := ca.Issue(t, testutil.IssueOptions{}, "127.0.0.1", "localhost")
	root := filepath.Join(dir, "https-root.pem")
	testutil.WriteFiles(t, dir, map[string]string{
		"https-root.pem": string(ca.PEM), "cert.pem": string(certPEM), "key.pem": string(keyPEM),
	})
	dns := startChallSrv(t)
	if o.Port == 0 {
		o.Port = testutil.FreePort(t)
	}
	mgmtPort := testutil.FreePort(t)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":           fmt.Sprintf("127.0.0.1:%d", o.Port),
		"managementListenAddress": fmt.Sprintf("127.0.0.1:%d", mgmtPort),
		"certificate":             filepath.Join(dir, "cert.pem"),
		"privateKey":              filepath.Join(dir, "key.pem"),
		"httpPort":                o.HTTPPort,
		"tlsPort":                 o.TLSPort,
		"ocspResponderURL":        "",
	}}
	if len(o.Blocklist) > 0 {
		cfg["pebble"].(map[string]any)["domainBlocklist"] = o.Blocklist
	}
	if o.Validity > 0 { // pebble 2.10 reads a profile's validity only
		cfg["pebble"].(map[string]any)["profiles"] = map[string]any{
			"default": map[string]any{"description": "test", "validityPeriod": int(o.Validity / time.Second)},
		}
	}
	b, _ := json.Marshal(cfg)
	testutil.WriteFiles(t, dir, map[string]string{"pebble.json": string(b)})
	p := &Pebble{
		Dir: dir, URL: fmt.Sprintf("https://127.0.0.1:%d/dir", o.Port), RootFile: root,
		HTTPS: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}},
		mgmt: fmt.Sprintf("https://127.0.0.1:%d", mgmtPort), t: t,
	}
	p.start(dns)
	t.Cleanup(p.Stop)
	return p
}

func (p *Pebble) start(dns string) {
	t := p.t
	t.Helper()
	cmd := exec.Command(binary(t, "pebble"), "-config", filepath.Join(p.Dir, "pebble.json"), "-dnsserver", dns)
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting pebble: %v", err)
	}
	p.mu.Lock()
	p.cmd, p.log = cmd, log
	p.mu.Unlock()
	testutil.Eventually(t, 20*time.Second, func() bool {
		res, err := p.HTTPS.Get(p.URL)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, "pebble did not answer at %s; its log:\n%s", p.URL, log)
}

// Stop stops pebble (the CA is then down); Restart starts it again on the
// same port, with a new root: certificates issued before do not chain to
// it.
func (p *Pebble) Stop() {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// Log returns pebble's output so far.
func (p *Pebble) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.log == nil {
		return ""
	}
	return p.log.String()
}

// Roots returns the root that signs issued certificates (from the
// management interface's /roots/0), as a pool and as PEM.
func (p *Pebble) Roots(t testing.TB) (*x509.CertPool, []byte) {
	t.Helper()
	res, err := p.HTTPS.Get(p.mgmt + "/roots/0")
	if err != nil {
		t.Fatalf("fetching pebble's root: %v", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("fetching pebble's root: %s %v", res.Status, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("pebble's root is not PEM: %q", b)
	}
	return pool, b
}

// startChallSrv runs pebble-challtestsrv as a DNS server on a free port
// answering 127.0.0.1 for every A query and nothing for AAAA.
func startChallSrv(t testing.TB) string {
	t.Helper()
	dns := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	cmd := exec.Command(binary(t, "pebble-challtestsrv"), "-dnsserver", dns, "-http01", "", "-https01", "", "-tlsalpn01", "",
		"-management", "127.0.0.1:"+strconv.Itoa(testutil.FreePort(t)), "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "")
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting pebble-challtestsrv: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(log.String(), "Starting") },
		"pebble-challtestsrv did not start; its log:\n%s", log)
	return dns
}

// lockedBuffer is a bytes.Buffer safe for one writer and many readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
