// Package router matches a request to a compiled route, runs its
// middlewares and hands it to an upstream. Apply compiles a configuration
// into an immutable Snapshot off to the side and publishes it with one
// atomic pointer store; a request loads the pointer once and keeps that
// table to its end, so a reload never changes a request in flight. The
// tradeoff is memory: two tables live side by side during a reload.
package router
