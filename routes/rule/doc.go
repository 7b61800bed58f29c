// Package rule parses Traefik v3 rule expressions (Host, PathPrefix, ...,
// HostSNI, ALPN) and compiles sets of them into tables that pick the route
// for a request view. Parsing and indexing happen once, at load time, so that
// a match reads a few map and tree lookups and evaluates only the routes its
// host and path can reach. The exact meaning is docs/rules.md.
//
// For `edgeway validate` a rule also knows what can be proved about the
// requests it matches (NeverMatches, Covers, CoverIndex): only what §4
// makes certain, so the answers are true but leave cases undecided.
package rule
