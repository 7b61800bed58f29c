package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// The dashboard's sessions. Logging in with the token makes a session: a
// random id the browser keeps in a cookie (never the token itself) and a
// CSRF token the page reads from GET /ui/session and sends back in the
// X-CSRF-Token header of every request that changes state. Sessions live
// in memory: a restart logs everyone out.

const (
	// sessionTTL is how long a session lasts from login; there is no
	// sliding renewal, so a stolen cookie is good for at most this long.
	sessionTTL = 12 * time.Hour
	// maxSessions bounds the sessions kept; a login beyond it replaces
	// the session that would end first.
	maxSessions = 64
	// sessionCookie names the cookie holding the session id.
	sessionCookie = "edgeway_session"
	// csrfHeader is the header a state-changing call with the cookie
	// carries the session's CSRF token in.
	csrfHeader = "X-CSRF-Token"
)

// session is one logged-in browser.
type session struct {
	csrf    string
	expires time.Time
}

// sessionStore holds the live sessions keyed by the SHA-256 of their id,
// so that a lookup's timing says nothing about the ids held.
type sessionStore struct {
	mu   sync.Mutex
	byID map[[sha256.Size]byte]session
}

func newSessionStore() *sessionStore {
	return &sessionStore{byID: make(map[[sha256.Size]byte]session)}
}

// randomToken returns 32 random bytes, base64url without padding.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create makes a session and returns its id and contents; expired
// sessions are dropped first, then, when still full, the one that ends
// soonest.
func (st *sessionStore) create(now time.Time) (string, session) {
	id := randomToken()
	s := session{csrf: randomToken(), expires: now.Add(sessionTTL)}
	st.mu.Lock()
	defer st.mu.Unlock()
	for k, v := range st.byID {
		if !now.Before(v.expires) {
			delete(st.byID, k)
		}
	}
	if len(st.byID) >= maxSessions {
		var oldest [sha256.Size]byte
		first := true
		for k, v := range st.byID {
			if first || v.expires.Before(st.byID[oldest].expires) {
				oldest, first = k, false
			}
		}
		delete(st.byID, oldest)
	}
	st.byID[sha256.Sum256([]byte(id))] = s
	return id, s
}

// lookup returns the live session with id.
func (st *sessionStore) lookup(id string, now time.Time) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.byID[k]
	if ok && !now.Before(s.expires) {
		delete(st.byID, k)
		return session{}, false
	}
	return s, ok
}

// remove ends the session with id (logout).
func (st *sessionStore) remove(id string) {
	k := sha256.Sum256([]byte(id))
	st.mu.Lock()
	delete(st.byID, k)
	st.mu.Unlock()
}

// len is the number of sessions held, expired ones included.
func (st *sessionStore) len() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.byID)
}

// csrfMatches reports, in constant time, whether got is the session's
// CSRF token.
func (s session) csrfMatches(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(s.csrf), []byte(got)) == 1
}
