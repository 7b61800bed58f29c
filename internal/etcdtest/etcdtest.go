// Package etcdtest runs a real etcd server (Debian's etcd-server, the
// `etcd` binary) for the tests of package cluster and of edgeway's cluster
// mode: one member on free loopback ports with its data in a temporary
// folder, as a separate process so that a test can stop, kill and restart
// it on the same data to model an outage. A test skips, naming the
// package to install, when etcd is not on $PATH; CI installs it (.ci/run).
package etcdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/internal/testutil"
)

// Options configure StartWith.
type Options struct {
	// TLS serves the client port over HTTPS with a certificate for
	// 127.0.0.1 from a CA made for the test (Server.CAFile), and asks
	// for client certificates signed by it (Server.ClientCert).
	TLS bool
}

// Server is a running etcd member.
type Server struct {
	// Dir holds the data folder and, with TLS, the PKI files.
	Dir string
	// CAFile is the PEM CA of the server certificate ("" without TLS).
	CAFile string
	// CA issues client certificates the server accepts (nil without TLS).
	CA *testutil.CA

	t           testing.TB
	bin         string
	args        []string
	clientURL   string
	mu          sync.Mutex
	cmd         *exec.Cmd
	exited      chan struct{}
	log         *os.File
	stopped     bool
	stopTimeout time.Duration
}

// Require skips the test when the etcd binary cannot be found.
func Require(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd not installed (apt-get install etcd-server; .ci/run installs it): skipping the cluster test")
	}
	return p
}

// Start starts a plaintext etcd on loopback and waits until it answers;
// it is killed when the test ends.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith starts etcd with o.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	bin := Require(t)
	dir := t.TempDir()
	s := &Server{Dir: dir, t: t, bin: bin, stopTimeout: 10 * time.Second}
	scheme := "http"
	var tlsArgs []string
	if o.TLS {
		scheme = "https"
		s.CA = testutil.NewCA(t, "etcd test CA")
		cert, key := s.CA.IssueFiles(t, dir, testutil.IssueOptions{}, "127.0.0.1", "localhost")
		s.CAFile = filepath.Join(dir, "etcd-ca.pem")
		testutil.WriteFiles(t, dir, map[string]string{"etcd-ca.pem": string(s.CA.PEM)})
		tlsArgs = []string{"--cert-file", cert, "--key-file", key, "--trusted-ca-file", s.CAFile, "--client-cert-auth"}
	}
	client, peer := testutil.FreePort(t), testutil.FreePort(t)
	s.clientURL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	s.args = append([]string{
		"--name", "s1",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", s.clientURL, "--advertise-client-urls", s.clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "s1=" + peerURL,
		"--log-outputs", "stderr", "--logger", "zap",
	}, tlsArgs...)
	t.Cleanup(s.Kill)
	s.start()
	return s
}

// Endpoints are the client URLs to give a client (and a cluster block).
func (s *Server) Endpoints() []string { return []string{s.clientURL} }

func (s *Server) start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		f, err := os.Create(filepath.Join(s.Dir, "etcd.log"))
		if err != nil {
			s.t.Fatalf("etcd log: %v", err)
		}
		s.log = f
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start etcd: %v", err)
	}
	s.cmd, s.exited, s.stopped = cmd, make(chan struct{}), false
	go func(c *exec.Cmd, done chan struct{}) {
		defer panics.Recover("etcdtest: wait")
		_ = c.Wait()
		close(done)
	}(cmd, s.exited)
	s.waitListening()
}

// waitListening waits until the client port accepts connections; etcd
// opens it once it serves (a single member elects itself first).
func (s *Server) waitListening() {
	s.t.Helper()
	host := s.hostPort()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", host, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-s.exited:
			s.t.Fatalf("etcd exited before serving; its log:\n%s", s.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("etcd did not listen on %s within 30s; its log:\n%s", host, s.Log())
		}
	}
}

func (s *Server) hostPort() string { _, hp, _ := strings.Cut(s.clientURL, "://"); return hp }

// Log returns what etcd wrote so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "etcd.log"))
	return string(b)
}

// Stop ends etcd with SIGTERM and waits for it; the data stays for
// Restart.
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

// Kill ends etcd with SIGKILL and waits for it; the data stays for
// Restart. It is safe to call on a stopped server.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(s.stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.stopped = true
}

// Restart starts etcd again on the same data folder and ports (after
// Stop or Kill) and waits until it listens.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// ClientCert issues a client certificate for user (its CN, the etcd user
// name under --client-cert-auth) signed by the server's CA, in a folder of
// its own, and returns the files. It needs StartWith(Options{TLS: true}).
func (s *Server) ClientCert(t testing.TB, user string) (certFile, keyFile string) {
	t.Helper()
	if s.CA == nil {
		t.Fatal("etcdtest: ClientCert needs a TLS server")
	}
	return s.CA.IssueFiles(t, t.TempDir(), testutil.IssueOptions{Client: true}, user)
}
