package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
)

// Options configures a Server. Only Listen and TokenFile are required; an
// interface left nil leaves its endpoint out (404).
type Options struct {
	// Listen is the address to listen on, HOST:PORT. An address that is
	// not loopback is allowed and logged as a warning.
	Listen string
	// TokenFile holds the bearer token (see ReadTokenFile).
	TokenFile string
	// Log receives warnings and serve errors. Nil discards them.
	Log *slog.Logger
	// Metrics is served on /metrics. Nil: a new NewMetrics("").
	Metrics *Metrics

	Reloader Reloader
	Routes   RouteLister
	Explain  Explainer
	Config   ConfigInfo
}

// APIFunc answers one API call. The value it returns is written as JSON
// with status 200, or with a Response's status; an error is written as
// {"error": ...} with the status an *Error carries (500 for others).
type APIFunc func(r *http.Request) (any, error)

// Server is the admin HTTP server. Register handlers with Handle before
// or while it serves; its methods are safe for concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	token   bearerToken
	mux     *http.ServeMux
	metrics *Metrics
	state   atomic.Int32 // a readiness
	srv     *http.Server
	ln      net.Listener

	sessions *sessionStore // the dashboard's logins
	xorigin  *http.CrossOriginProtection
	assets   fs.FS // the dashboard's files
}

// New reads the token file and builds the server with its endpoints; it
// does not listen yet. It fails when the token file is missing, empty or
// accessible by group or others.
func New(opts Options) (*Server, error) {
	secret, err := ReadTokenFile(opts.TokenFile)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Log, token: newToken(secret), mux: http.NewServeMux(), metrics: opts.Metrics,
		sessions: newSessionStore(), xorigin: http.NewCrossOriginProtection()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.metrics == nil {
		s.metrics = NewMetrics("")
	}
	s.routes()
	s.uiRoutes()
	return s, nil
}

// Metrics returns the registry holder served on /metrics, to register
// more collectors.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Handle registers fn for pattern, in http.ServeMux syntax with a method
// ("GET /api/upstreams", "POST /api/upstreams/{pool}/drain"). The path must
// be under /api/: every call then needs the token. Handle panics on a
// pattern outside /api/ or one that conflicts with a registered one, as
// ServeMux does.
func (s *Server) Handle(pattern string, fn APIFunc) {
	method, p, ok := strings.Cut(pattern, " ")
	if !ok || method == "" || !strings.HasPrefix(strings.TrimSpace(p), "/api/") {
		panic(fmt.Sprintf("admin: pattern %q: want METHOD /api/PATH", pattern))
	}
	s.mux.Handle(pattern, apiHandler(fn))
}

func apiHandler(fn APIFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(r)
		switch resp, isResp := v.(Response); {
		case err != nil:
			writeError(w, err)
		case isResp:
			writeJSON(w, resp.Status, resp.Body)
		default:
			writeJSON(w, http.StatusOK, v)
		}
	})
}

// ServeHTTP checks the token (or a dashboard session) where one is
// needed, then routes r; unknown paths and methods get JSON 404 and 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if needsToken(path.Clean("/" + r.URL.Path)) {
		if err := s.authorize(r); err != nil {
			if err.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="edgeway admin"`)
			}
			writeError(w, err)
			return
		}
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.notRouted(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// notRouted answers a request no pattern takes: 405 with Allow when the
// path is known for other methods, else 404.
func (s *Server) notRouted(w http.ResponseWriter, r *http.Request) {
	h, _ := s.mux.Handler(r)
	rec := &statusRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if rec.status == http.StatusMethodNotAllowed {
		allow := rec.header.Get("Allow")
		w.Header().Set("Allow", allow)
		writeError(w, Errorf(http.StatusMethodNotAllowed, "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
		return
	}
	writeError(w, Errorf(http.StatusNotFound, "not found: %s", r.URL.Path))
}

// statusRecorder keeps what ServeMux's own 404 and 405 handlers write.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header { return r.header }
func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *statusRecorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(b), nil
}

// Start listens on Options.Listen and serves in the background. Serve
// errors after the start are logged.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("admin listen: %w", err)
	}
	if !loopback(s.opts.Listen) {
		s.log.Warn("the admin API listens on an address that is not loopback; "+
			"anyone who can reach it and has the token can reload and inspect edgeway", "addr", s.opts.Listen)
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	panics.Go("admin server", func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin API stopped", "err", err)
		}
	})
	return nil
}

// Addr returns the address Start bound, nil before.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops the server, letting calls in flight finish until ctx
// ends.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("admin shutdown: %w", err)
	}
	return nil
}

// loopback reports whether addr's host is a loopback address or
// "localhost"; an empty host (every address) is not.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
