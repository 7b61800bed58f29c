// Package tracing gives edgeway its place in a distributed trace: it reads
// and writes W3C traceparent values, makes the sampling decision for a
// request, and starts OpenTelemetry spans that a bounded batch exports
// over OTLP/HTTP. The tradeoff is made for the request path: the decision
// (ParentBased(TraceIDRatioBased), the SDK's own rule) is taken here,
// before any SDK object exists, so a request that is not sampled costs a
// parse and two random numbers and allocates nothing; a sampled one costs
// the SDK's span, its attributes and its export (6 to 9 µs of CPU, 22
// allocations and 5.6 KB on a two-core machine: BenchmarkTracingRespond
// in router). When the collector is slow or down, spans beyond the queue
// are dropped and counted, never waited for.
package tracing
