package conf

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// ACME is the tls block's `acme { ... }` block: certificates ordered from
// an ACME CA (RFC 8555) for the names it lists and for the literal Host
// names of routes that say `acme on`. Names not configured
// are never ordered. Package acme does the work.
type ACME struct {
	// Directory is the CA's directory URL (`directory URL`, or the
	// shorthands letsencrypt and letsencrypt-staging). Default Let's
	// Encrypt production.
	Directory string
	// Email is the account's contact (`email ADDR`). Default none.
	Email string
	// AcceptTerms agrees to the CA's terms of service (`accept_terms
	// on`). Required: Load refuses an acme block without it.
	AcceptTerms bool
	// CARoot is a PEM file of CAs trusted for the directory's HTTPS
	// (`ca_root FILE`), for a private or test CA. Default "": the system
	// roots.
	CARoot string
	// Storage is the directory holding the account, certificates and
	// keys (`storage DIR`), made 0700. Default /var/lib/edgeway/acme.
	Storage string
	// Names are the names listed with `names NAME...`: host names in
	// lower case, no wildcards (HTTP-01 and TLS-ALPN-01 cannot prove
	// them) and no IP addresses.
	Names []string
	// Routes names the routes whose literal Host names are ordered too
	// (their `acme on` lines); Config.ACMENames resolves them.
	Routes []string
	// Challenges are the challenge types to try, in order
	// (`challenges http-01 tls-alpn-01`): when the CA offers the first
	// it is used, else the next. Default http-01 then tls-alpn-01.
	Challenges []string
	// KeyType is the certificates' key (`key_type ecdsa|rsa`): ECDSA
	// P-256 or RSA 2048. Default ecdsa.
	KeyType string
	// RenewBefore renews a certificate this long before it expires
	// (`renew_before 30d`). Default 0: when a third of its lifetime is
	// left, or earlier when the CA's renewal information (ARI) says so.
	RenewBefore time.Duration
	// EABKeyID and EABHMAC are the external account binding
	// (`eab KEYID HMAC`, HMAC base64url); default none.
	EABKeyID, EABHMAC string
	Pos               Pos
}

// Directory URLs of Let's Encrypt, and the default storage.
const (
	LetsEncryptURL        = "https://acme-v02.api.letsencrypt.org/directory"
	LetsEncryptStagingURL = "https://acme-staging-v02.api.letsencrypt.org/directory"
	DefaultACMEStorage    = "/var/lib/edgeway/acme"
)

// Challenge types of ACME.Challenges.
const (
	ChallengeHTTP01    = "http-01"
	ChallengeTLSALPN01 = "tls-alpn-01"
)

// DefaultACME returns an ACME block with every default filled in.
func DefaultACME() ACME {
	return ACME{
		Directory:  LetsEncryptURL,
		Storage:    DefaultACMEStorage,
		Challenges: []string{ChallengeHTTP01, ChallengeTLSALPN01},
		KeyType:    "ecdsa",
	}
}

// acmeRouteNS is the builder namespace holding the routes that said
// `acme on` before the acme block was read.
const acmeRouteNS = "acme route"

func acmeDirective(b *builder, s *TLSStore, d *routes.Directive) {
	a := DefaultACME()
	a.Pos = b.pos(d.Pos)
	run(b, acmeTable, &a, d.Block.Directives)
	if !a.AcceptTerms {
		b.missingf(d, "acme: needs `accept_terms on` (agreeing to the CA's terms of service)")
	}
	for name := range b.names[acmeRouteNS] {
		a.Routes = append(a.Routes, name)
	}
	slices.Sort(a.Routes)
	s.ACME = &a
}

var acmeTable = table[*ACME]{
	"directory": acmeDirectory,
	"email": func(b *builder, a *ACME, d *routes.Directive) {
		if v := d.Args[0].Value; !strings.Contains(v, "@") {
			b.errorf(d.Args[0].Pos, "email: %q is not an email address", v)
		} else {
			a.Email = v
		}
	},
	"accept_terms": func(b *builder, a *ACME, d *routes.Directive) { b.setSwitch(d, &a.AcceptTerms) },
	"ca_root": func(b *builder, a *ACME, d *routes.Directive) {
		if p := b.filePath(d, 0, ReadFile); p != "" {
			a.CARoot = p
		}
	},
	"storage": func(b *builder, a *ACME, d *routes.Directive) {
		if p := b.filePath(d, 0, WritableDir); p != "" {
			a.Storage = p
		}
	},
	"names":      acmeNames,
	"challenges": acmeChallenges,
	"key_type": func(b *builder, a *ACME, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "key type", []string{"ecdsa", "rsa"}); ok {
			a.KeyType = v
		}
	},
	"renew_before": func(b *builder, a *ACME, d *routes.Directive) { b.setDuration(d, &a.RenewBefore) },
	"eab": func(b *builder, a *ACME, d *routes.Directive) {
		a.EABKeyID, a.EABHMAC = d.Args[0].Value, d.Args[1].Value
	},
}

func acmeDirectory(b *builder, a *ACME, d *routes.Directive) {
	v := d.Args[0].Value
	switch v {
	case "letsencrypt":
		a.Directory = LetsEncryptURL
		return
	case "letsencrypt-staging":
		a.Directory = LetsEncryptStagingURL
		return
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		b.errorf(d.Args[0].Pos, "directory: %q is not an https URL (or letsencrypt, letsencrypt-staging)", v)
		return
	}
	a.Directory = v
}

func acmeNames(b *builder, a *ACME, d *routes.Directive) {
	b.certNames(d, "names", validACMEName, "a host name such as example.com; no wildcards or IP addresses", &a.Names)
}

// validACMEName accepts a host name HTTP-01 and TLS-ALPN-01 can prove.
func validACMEName(name string) bool {
	return validHost(name) && !isIP(name) && !strings.HasSuffix(name, ".") &&
		!strings.Contains(name, "*") && strings.Contains(name, ".")
}

func acmeChallenges(b *builder, a *ACME, d *routes.Directive) {
	a.Challenges = nil
	for _, arg := range d.Args {
		v, ok := b.oneOf(arg, "challenge type", []string{ChallengeHTTP01, ChallengeTLSALPN01})
		switch {
		case !ok:
		case containsString(a.Challenges, v):
			b.errorf(arg.Pos, "challenges: %s is listed twice", v)
		default:
			a.Challenges = append(a.Challenges, v)
		}
	}
}
