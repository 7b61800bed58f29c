// Package acme obtains and renews certificates from an ACME CA (RFC 8555)
// for the names the configuration marks, and hands them to the
// certificate store (package edgetls). It is built on
// golang.org/x/crypto/acme rather than autocert so that edgeway owns the
// storage (a small Storage interface a cluster store can replace), the
// challenges (HTTP-01 answered by the cleartext listeners before routing,
// TLS-ALPN-01 by the store's GetCertificate) and the renewal schedule.
//
// Its tradeoff: one goroutine per name, each owning its name's schedule,
// so a slow or failing order for one name never delays another and never
// blocks a handshake (the store keeps serving the current certificate
// until a new one is swapped in with one atomic store). Concurrent demands
// for one name share one order.
//
// # Renewal
//
// A certificate is renewed when a third of its lifetime is left (or
// RenewBefore before expiry), less a random jitter of up to a tenth of
// that window, or earlier when the CA's renewal information (RFC 9773,
// ARI) suggests a window that starts earlier: then at a random time in
// that window. A failed order is retried after an exponential backoff
// (RetryMin doubling to RetryMax), never sooner than the CA's
// Retry-After; the current certificate stays served meanwhile.
//
// # Storage
//
// Under a folder per CA (its directory URL's host and path), Storage
// holds account.key and account.json, and per name NAME.crt (PEM chain)
// and NAME.key (PEM key). Dir writes each file atomically (temp file,
// fsync, rename, fsync of the folder), so a crash or a shutdown during an
// order leaves either the old pair or the new one: the key is written
// before the certificate, and a certificate whose key does not match is
// ignored at load.
//
// # Several instances
//
// Instances that share one Storage (a cluster store) share the work: an
// order runs under the name's lock (names/NAME; a lock that is lost ends
// the order, and PutLocked refuses the loser's writes); challenges are
// published under challenges/ before they are accepted, and HTTP01 and
// the TLS-ALPN-01 lookup read them there when the ordering instance is
// another; the order is journaled under orders/NAME (its URL and stage,
// and the CSR key before finalize), so the instance that takes the lock
// after a crash resumes it rather than placing a second; a Storage that
// is a Watcher makes every instance serve a certificate another stored
// at once.
package acme
