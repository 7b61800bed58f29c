// Package edgetls is the certificate store of every TLS listener: it loads
// certificate files, takes certificates from other sources (ACME), chooses
// one per handshake by SNI, staples OCSP responses and owns the session
// ticket keys. Import it as edgetls next to crypto/tls. Its tradeoff: all
// work (parsing, indexing, OCSP fetching, key rotation) happens off the
// handshake path, so a handshake only reads one atomic pointer and does a
// map lookup or two, and a slow responder or a bad reload never holds a
// handshake up.
//
// # Selection
//
// GetCertificate lowercases the SNI name and drops one trailing dot, then
// tries, in order:
//
//  1. the certificates whose DNS SANs hold the name exactly;
//  2. the wildcard "*.rest" where rest is the name less its first label:
//     *.example.com covers a.example.com, not example.com nor
//     a.b.example.com;
//  3. the default: the certificate marked default in the tls block, else
//     the first one listed (file certificates come before put ones).
//
// A ClientHello without SNI gets the default. A name may have several
// certificates (RSA and ECDSA with the same names); the first the client
// supports (tls.ClientHelloInfo.SupportsCertificate) is served, in the
// order ECDSA, Ed25519, RSA. The default brings along the certificates of
// the same source with exactly its names, so that an RSA-only client
// without SNI still finds one. A store without any certificate fails the
// handshake (ErrNoCertificate; with a ServerConfig config, the client
// gets an unrecognized_name alert).
//
// A lookup costs no allocation when a name has one certificate: about
// 20-30ns (BenchmarkGetCertificate, exact, wildcard and default). Choosing
// between RSA and ECDSA runs crypto/tls's SupportsCertificate: about 80ns
// and 2 small allocations when the first (ECDSA) fits, 1.5µs and 10 when
// the client only takes RSA.
//
// # Sources and the atomic swap
//
// Load reads every certificate of the tls block (and makes the
// self_signed one) into a new immutable index and publishes it with one
// atomic pointer store; a handshake uses the index it loaded to its end.
// If any file fails, Load returns an error naming it and the old index
// stays. Put adds certificates of another source (ACME) the same way;
// they are a layer Load keeps. When sources share a name, the one that
// changed last is served: each certificate records when it last changed,
// and a Load that rereads an unchanged file keeps that time. List shows
// every certificate, with Active false for those a newer source shadows.
//
// # OCSP stapling
//
// With stapling on, each certificate that names an OCSP responder and
// whose chain holds its issuer has a background fetcher: it posts a
// request (golang.org/x/crypto/ocsp, 10s timeout), verifies the answer
// with the issuer, and staples a Good answer by storing a new
// tls.Certificate value with OCSPStaple set (a value handshakes read is
// never changed). It asks again at half the remaining validity, kept
// between 5 minutes and 12 hours, and after a failure retries with an
// exponential backoff from 1 minute to 1 hour. Meanwhile handshakes go on
// with the last good staple until its NextUpdate, then without one. A
// Revoked answer is logged as an error and the staple dropped; Unknown is
// treated as a failure. A certificate keeps its staple across reloads.
//
// # Session tickets
//
// The store owns the session ticket keys: a random 32-byte key made every
// ticket_rotation (12h by default) seals new tickets, and tickets sealed
// by the previous two keys are still accepted, so a ticket lives between
// two and three rotations. The configs ServerConfig builds reach the keys
// through WrapSession/UnwrapSession, in the standard crypto/tls ticket
// format, so a rotation reaches every config and its clones at once (no
// list of configs to update). With session_tickets off, configs set
// SessionTicketsDisabled. Instances that share their keys (a cluster
// block) feed them through SetTicketKeys, which ends the local rotation:
// the cluster rotates once per period for every instance.
package edgetls
