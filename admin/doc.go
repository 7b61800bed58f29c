// Package admin serves edgeway's admin API: JSON over HTTP on a listener of
// its own (loopback by default), with liveness and readiness probes,
// operator endpoints under /api/, Prometheus metrics and a dashboard under
// /ui/. Every /api/ and /metrics call needs the bearer token read from the
// token file, or a dashboard session (ui.go, session.go) and, for a call
// that changes state, its CSRF token. The
// tradeoff: admin knows nothing of the router or the daemon; it reads
// their state through small interfaces (Reloader, RouteLister, Explainer,
// ConfigInfo) that the binary implements, so other parts add endpoints
// with Server.Handle and collectors with Metrics.Register instead of
// editing this package.
//
// The admin server is not on the request path: it uses net/http and
// allocates freely.
package admin
