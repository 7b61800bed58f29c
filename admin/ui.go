package admin

import (
	"embed"
	"io/fs"
	"net/http"
	"time"
)

// The dashboard: hand-written HTML, CSS and JavaScript embedded in the
// binary and served under /ui/. Its pages read the same /api/ endpoints
// as curl does, with the session cookie instead of the bearer token, so
// an action in the page takes the API's code path (and writes its log
// line). Nothing is built at run time and nothing is fetched from
// elsewhere: the Content-Security-Policy allows this origin only.

//go:embed ui
var uiFiles embed.FS

// uiCSP is the dashboard's Content-Security-Policy: scripts, styles and
// fetches from the admin listener only, no inline script or style, no
// framing, forms posting only here.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// maxLoginForm bounds the body of POST /ui/login.
const maxLoginForm = 8 << 10

// uiRoutes registers the dashboard's endpoints.
func (s *Server) uiRoutes() {
	assets, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the folder is embedded
	}
	s.assets = assets
	s.mux.Handle("GET /ui/assets/{name}", uiHeaders(http.HandlerFunc(s.uiAsset)))
	s.mux.Handle("GET /ui/{$}", uiHeaders(http.HandlerFunc(s.uiIndex)))
	s.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	s.mux.Handle("GET /ui/login", uiHeaders(http.HandlerFunc(s.uiLoginPage)))
	s.mux.Handle("POST /ui/login", uiHeaders(http.HandlerFunc(s.uiLogin)))
	s.mux.Handle("POST /ui/logout", uiHeaders(http.HandlerFunc(s.uiLogout)))
	s.mux.Handle("GET /ui/session", uiHeaders(http.HandlerFunc(s.uiSession)))
}

// uiHeaders sets the headers every dashboard answer carries.
func uiHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", uiCSP)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// uiAssets are the files served under /ui/assets/ to anyone: the
// scripts and the style sheet. The pages are served by their own
// handlers, the dashboard's only with a session.
var uiAssets = map[string]bool{"app.js": true, "app.css": true, "login.js": true}

func (s *Server) uiAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !uiAssets[name] {
		writeError(w, Errorf(http.StatusNotFound, "not found: %s", r.URL.Path))
		return
	}
	http.ServeFileFS(w, r, s.assets, name)
}

// uiIndex serves the dashboard to a logged-in browser and sends any
// other to the login page.
func (s *Server) uiIndex(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.session(r); !ok {
		http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
		return
	}
	s.servePage(w, r, "index.html")
}

func (s *Server) uiLoginPage(w http.ResponseWriter, r *http.Request) {
	s.servePage(w, r, "login.html")
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Cache-Control", "no-store")
	http.ServeFileFS(w, r, s.assets, name)
}

// uiLogin checks the token of the login form in constant time; when it is
// right it starts a session and sends the browser to the dashboard, else
// back to the login page. The token travels in the POST body only.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) {
	if err := s.xorigin.Check(r); err != nil {
		writeError(w, &Error{Status: http.StatusForbidden, Message: "cross-origin login refused", Err: err})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	if !s.token.matches(r.PostFormValue("token")) {
		s.log.Warn("dashboard login refused: wrong token", "remote", r.RemoteAddr)
		http.Redirect(w, r, "/ui/login?failed=1", http.StatusSeeOther)
		return
	}
	id, sess := s.sessions.create(time.Now())
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", Expires: sess.expires, MaxAge: int(sessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
		// A browser keeps a Secure cookie only from an https origin; the
		// admin listener is plain HTTP on loopback unless TLS is put in
		// front of it, so the cookie is Secure when the request came over
		// TLS.
		Secure: r.TLS != nil,
	})
	s.log.Info("dashboard login", "remote", r.RemoteAddr)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// uiLogout ends the session; like every call that changes state it needs
// the CSRF token.
func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r); err != nil {
		writeError(w, err)
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.remove(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

// sessionInfo is GET /ui/session: what the page needs to make calls.
type sessionInfo struct {
	CSRFToken string    `json:"csrf_token"`
	Expires   time.Time `json:"expires"`
}

func (s *Server) uiSession(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(r)
	if !ok {
		writeError(w, errNoSession)
		return
	}
	writeJSON(w, http.StatusOK, sessionInfo{CSRFToken: sess.csrf, Expires: sess.expires})
}

var errNoSession = &Error{Status: http.StatusUnauthorized, Message: "not logged in (log in at /ui/login)"}

// session returns r's live session, from its cookie.
func (s *Server) session(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	return s.sessions.lookup(c.Value, time.Now())
}

// authorize lets r in with the bearer token, or with a session cookie;
// a session's call that changes state (not GET, HEAD or OPTIONS) must
// also be same-origin and carry the session's CSRF token in X-CSRF-Token.
func (s *Server) authorize(r *http.Request) *Error {
	if s.token.authorized(r) {
		return nil
	}
	sess, ok := s.session(r)
	if !ok {
		return errUnauthorized
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if err := s.xorigin.Check(r); err != nil {
		return &Error{Status: http.StatusForbidden, Message: "cross-origin request refused", Err: err}
	}
	if !sess.csrfMatches(r.Header.Get(csrfHeader)) {
		return &Error{Status: http.StatusForbidden, Message: "missing or wrong " + csrfHeader + " header (a session's token, from GET /ui/session)"}
	}
	return nil
}

var errUnauthorized = &Error{Status: http.StatusUnauthorized, Message: "missing or wrong bearer token (send Authorization: Bearer TOKEN)"}
