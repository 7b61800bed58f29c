package admin

import (
	"context"
	"time"
)

// The daemon implements these interfaces; the admin server reads its
// state through them only. Each must be safe for concurrent use.

// Reloader reloads the configuration files the way SIGHUP does. Reload
// blocks until the reload has run or ctx ends; reloads never overlap. The
// error is for a reload that could not run at all (edgeway is stopping,
// ctx ended); a configuration that is refused is a ReloadResult with OK
// false.
type Reloader interface {
	Reload(ctx context.Context, opts ReloadOptions) (ReloadResult, error)
}

// ReloadOptions are the choices a POST /api/reload can make.
type ReloadOptions struct {
	// AllowEmpty applies a configuration that leaves a listener that
	// serves routes with none (?allow_empty=1); otherwise such a reload
	// is refused, as a truncated route file would cause it.
	AllowEmpty bool
}

// RouteLister lists the routes of the live table.
type RouteLister interface {
	Routes() []Route
}

// Explainer tells which live route would serve a request or a TLS
// connection. It returns ErrNoRoute when none would, and an *Error with
// status 400 for a question it cannot read.
type Explainer interface {
	Explain(q ExplainQuery) (Explanation, error)
}

// ConfigInfo describes the live configuration and the last reload.
type ConfigInfo interface {
	ConfigStatus() ConfigStatus
}

// Route is one compiled route, as GET /api/routes lists it.
type Route struct {
	Name string `json:"name"`
	// Kind is "http" or "tcp".
	Kind     string `json:"kind"`
	Rule     string `json:"rule"`
	Priority int    `json:"priority"`
	// Listeners are the listeners the route serves (every listener when
	// the route names none).
	Listeners []string `json:"listeners"`
	// Upstream is the pool requests go to; empty when the route answers
	// itself (respond, redirect).
	Upstream string `json:"upstream,omitempty"`
	// Middlewares lists the kinds of the route's middlewares in order.
	Middlewares []string `json:"middlewares"`
	// Source is where the route is defined: file:line:col.
	Source string `json:"source"`
	// Split is the route's traffic split; absent for a route to one
	// pool.
	Split *RouteSplit `json:"split,omitempty"`
}

// RouteSplit is a route's traffic split as it runs now.
type RouteSplit struct {
	// Pools are the split's pools in the files' order.
	Pools []SplitPool `json:"pools"`
	// Override is true when the shares were set through PATCH
	// /api/routes/{name}.
	Override bool `json:"override"`
	// Sticky is "cookie NAME", "header NAME" or "" (none).
	Sticky string `json:"sticky"`
	// Rollback is the rollback block; nil (null) when none.
	Rollback *SplitRollback `json:"rollback"`
}

// SplitPool is one pool of a split. Shares are percentages.
type SplitPool struct {
	Upstream string `json:"upstream"`
	// ConfiguredShare is the files' share, Share the one in effect (the
	// override's, or 0 after a rollback).
	ConfiguredShare float64 `json:"configured_share"`
	Share           float64 `json:"share"`
	// RolledBack is when the rollback set the share to 0; nil (null)
	// when it has not, or an operator restored it.
	RolledBack *time.Time `json:"rolled_back"`
	// Requests counts the requests placed on the pool since start,
	// Rollbacks the rollbacks; WindowRequests and WindowFailures are
	// the rollback window's (failures: 5xx and upstream failures).
	Requests       uint64 `json:"requests"`
	Rollbacks      uint64 `json:"rollbacks"`
	WindowRequests uint64 `json:"window_requests"`
	WindowFailures uint64 `json:"window_failures"`
}

// SplitRollback is a split's rollback block.
type SplitRollback struct {
	ErrorRate     float64 `json:"error_rate"` // percent
	WindowSeconds float64 `json:"window_seconds"`
	MinRequests   int     `json:"min_requests"`
}

// ExplainQuery is one question for GET /api/explain: an HTTP request
// (Method, URL, Headers) or, when TLS is set, a TLS connection (SNI, ALPN;
// SNI "" is a ClientHello without server name).
type ExplainQuery struct {
	Method string
	URL    string
	// Headers are "Name: value" lines; a Host header overrides the URL's.
	Headers []string
	// ClientIP is the address the request or connection comes from.
	ClientIP string
	// Listener names the listener; empty picks it by the URL's port.
	Listener string
	TLS      bool
	SNI      string
	ALPN     []string
}

// Explanation is the route that would serve an ExplainQuery.
type Explanation struct {
	// Kind is "http" or "tcp".
	Kind     string `json:"kind"`
	Listener string `json:"listener,omitempty"`
	Route    string `json:"route"`
	// Upstream is empty when the route answers itself; for a traffic
	// split it is the split's first pool, and Split lists them all.
	Upstream string `json:"upstream,omitempty"`
	// Split is a split route's pools with their shares as the files
	// write them ("v1 90%"); absent otherwise. GET /api/routes/{name}
	// shows the shares in effect.
	Split []string `json:"split,omitempty"`
	// Rule is the text of the rule that matched.
	Rule     string `json:"rule"`
	Priority int    `json:"priority"`
	Source   string `json:"source"`
	// UpstreamPath is the path and query sent upstream, after
	// strip_prefix and add_prefix (HTTP routes with an upstream).
	UpstreamPath string `json:"upstream_path,omitempty"`
	// Status is the answer of a route that answers itself (respond,
	// redirect), Location a redirect's target.
	Status   int    `json:"status,omitempty"`
	Location string `json:"location,omitempty"`
	// Settings are the upstream's effective timeouts and retries; nil
	// when the route answers itself.
	Settings *UpstreamSettings `json:"settings,omitempty"`
	// Policies are the policies the request meets, in order (listener
	// allow/deny, allow/deny, cors, error_page).
	Policies []string `json:"policies,omitempty"`
	// Denied is "listener" or "route" when that one's access lists refuse
	// the client_ip given (Status 403).
	Denied string `json:"denied,omitempty"`
	// TriedBefore are the routes of the listener tried before Route (a
	// higher priority, or the same one earlier in the files) whose rules
	// did not match, in the order tried; at most maxTried of them, and
	// TriedCount is how many there were.
	TriedBefore []string `json:"tried_before,omitempty"`
	TriedCount  int      `json:"tried_count,omitempty"`
}

// UpstreamSettings are what an upstream's settings come to for a request
// (the defaults filled in).
type UpstreamSettings struct {
	ConnectTimeout  float64 `json:"connect_timeout_seconds"`
	ResponseTimeout float64 `json:"response_timeout_seconds"`
	IdleTimeout     float64 `json:"idle_timeout_seconds"`
	// Retries is how many more tries a request may get.
	Retries int    `json:"retries"`
	Balance string `json:"balance"`
	// MaxBodyBytes is the request body limit; 0: none.
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// From says where each setting comes from, by directive name
	// (connect_timeout, response_timeout, idle_timeout, retries,
	// max_body_bytes): "route FILE:LINE:COL" for the route's own line,
	// "upstream NAME FILE:LINE:COL" or "listener NAME FILE:LINE:COL" for
	// the block whose value (written or default) applies.
	From map[string]string `json:"from"`
}

// ConfigStatus is GET /api/config.
type ConfigStatus struct {
	// Version is edgeway's version.
	Version string `json:"version"`
	// Generation counts the configurations made live: 1 for the one
	// loaded at start, one more for each applied reload.
	Generation int `json:"generation"`
	// Hash identifies the live files (ConfigHash of Files).
	Hash     string    `json:"hash"`
	LoadedAt time.Time `json:"loaded_at"`
	Files    []File    `json:"files"`
	// LastReload is the last reload tried, applied or refused; nil when
	// none was tried since start.
	LastReload *ReloadResult `json:"last_reload"`
}

// File is one configuration file and the SHA-256 of the bytes loaded.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// ReloadResult is the outcome of one reload.
type ReloadResult struct {
	OK bool `json:"ok"`
	// Error sums up a refused reload; empty when OK.
	Error string `json:"error,omitempty"`
	// Errors are every problem found, each with file:line:col when it
	// has one.
	Errors []ReloadError `json:"errors,omitempty"`
	// Trigger is what asked for it: "signal", "watch" or "api".
	Trigger  string    `json:"trigger"`
	Time     time.Time `json:"time"`
	Duration float64   `json:"duration_seconds"`
	// Generation is the live configuration's after the reload.
	Generation int `json:"generation"`
}

// ReloadError is one problem that refused a reload.
type ReloadError struct {
	// At is file:line:col; empty for an error of the whole configuration
	// (a listener change that needs a restart).
	At      string `json:"at,omitempty"`
	Message string `json:"message"`
	// Source is the text of the line At names, when there is one.
	Source string `json:"source,omitempty"`
}
