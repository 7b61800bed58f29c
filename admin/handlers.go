package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes registers the built-in endpoints; those whose interface is nil
// are left out.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry(), promhttp.HandlerOpts{}))
	if s.opts.Routes != nil {
		s.Handle("GET /api/routes", s.listRoutes)
	}
	if s.opts.Config != nil {
		s.Handle("GET /api/config", func(*http.Request) (any, error) { return s.opts.Config.ConfigStatus(), nil })
	}
	if s.opts.Explain != nil {
		s.Handle("GET /api/explain", s.explain)
	}
	if s.opts.Reloader != nil {
		s.Handle("POST /api/reload", s.reload)
	}
}

// routeList is GET /api/routes.
type routeList struct {
	Routes []Route `json:"routes"`
}

func (s *Server) listRoutes(*http.Request) (any, error) {
	list := s.opts.Routes.Routes()
	if list == nil {
		list = []Route{}
	}
	return routeList{Routes: list}, nil
}

// explain reads an ExplainQuery from the query string: method (default
// GET), url, header (repeatable, "Name: value"), client_ip, listener, sni
// and alpn (repeatable).
func (s *Server) explain(r *http.Request) (any, error) {
	v := r.URL.Query()
	q := ExplainQuery{
		Method:   v.Get("method"),
		URL:      v.Get("url"),
		Headers:  v["header"],
		ClientIP: v.Get("client_ip"),
		Listener: v.Get("listener"),
		TLS:      v.Has("sni"),
		SNI:      v.Get("sni"),
		ALPN:     v["alpn"],
	}
	if !q.TLS && q.URL == "" {
		return nil, Errorf(http.StatusBadRequest, "explain needs url=ABSOLUTE-URL (with method=, header=) or sni=NAME (with alpn=)")
	}
	if q.Method == "" {
		q.Method = http.MethodGet
	}
	return s.opts.Explain.Explain(q)
}

// reload runs a reload and answers its result: 200 when applied, 422 when
// the configuration was refused (the old one stays live), 503 when it
// could not run.
func (s *Server) reload(r *http.Request) (any, error) {
	var opts ReloadOptions
	if v := r.URL.Query().Get("allow_empty"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("allow_empty: expected 1, true, 0 or false, got %q", v)}
		}
		opts.AllowEmpty = b
	}
	res, err := s.opts.Reloader.Reload(r.Context(), opts)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{Status: http.StatusServiceUnavailable, Message: "reload not run: " + err.Error(), Err: err}
	}
	if !res.OK {
		return Response{Status: http.StatusUnprocessableEntity, Body: res}, nil
	}
	return res, nil
}
