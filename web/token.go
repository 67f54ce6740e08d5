package web

import (
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// tokenCookie is the cookie that carries the token after a request gave
// it as ?token=.
const tokenCookie = "reprise_token"

// RequireToken serves next only to requests that carry token: in an
// Authorization: Bearer header, in a token query parameter (the answer
// then sets a cookie, so that the browser need give it once, and sends
// the browser on to the same path on this site without it), or in that
// cookie. Any other request is refused with 401. An empty token refuses
// all. The cookie holds the token base64-encoded, so a token of any bytes
// survives the login; a token typed into an address bar is best made of
// the characters ValidToken takes.
func RequireToken(token string, next http.Handler) http.Handler {
	same := func(got string) bool {
		return token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
	}
	cookie := base64.RawURLEncoding.EncodeToString([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if scheme, auth, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") && same(auth) {
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(tokenCookie); err == nil && token != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(cookie)) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		if q.Has("token") && same(q.Get("token")) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			u := url.URL{Path: localPath(r.URL.Path), RawQuery: q.Encode()}
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="reprise"`)
		http.Error(w, "this view needs its token: give ?token=TOKEN once, or an Authorization: Bearer header", http.StatusUnauthorized)
	})
}

// localPath returns path as a path on this site: a browser takes one that
// starts with two slashes, or a slash and a backslash, for another site's
// address (//host/...), so those are cut to one slash.
func localPath(path string) string {
	return "/" + strings.TrimLeft(path, "/\\")
}

// ValidToken reports whether token is made only of the characters that an
// address carries as they are (letters, digits, '-', '.', '_', '~'), so
// that ?token=TOKEN typed or pasted anywhere logs in. reprise serve takes
// only such tokens.
func ValidToken(token string) bool {
	for _, c := range []byte(token) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return token != ""
}

// RequireLoopbackHost serves next only to requests whose Host names this
// machine by a loopback name or address: localhost, 127.0.0.1, [::1]. A
// handler that listens on loopback without a token needs it: a page of
// another site that the browser's DNS makes point at 127.0.0.1 (DNS
// rebinding) would otherwise read the view as its own origin. Any other
// Host is refused with 421 Misdirected Request.
func RequireLoopbackHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !LoopbackHost(r.Host) {
			http.Error(w, "this view answers only to a loopback address, such as 127.0.0.1 or localhost", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHost reports whether the Host of a request, a name or an
// address with an optional port, names this machine only. An empty Host
// (an HTTP/1.0 request) names nothing, and anything but exactly a name,
// or an IPv6 address in brackets, then an optional :PORT of digits is
// refused: "[::1].evil" is not [::1].
func LoopbackHost(hostport string) bool {
	host, port := hostport, ""
	if rest, ok := strings.CutPrefix(hostport, "["); ok {
		ip, after, ok := strings.Cut(rest, "]")
		if !ok || strings.ContainsAny(ip, "[]") || !strings.Contains(ip, ":") {
			return false
		}
		if after != "" {
			var hasColon bool
			if port, hasColon = strings.CutPrefix(after, ":"); !hasColon || port == "" {
				return false
			}
		}
		host = ip
	} else if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		host, port = hostport[:i], hostport[i+1:]
		if port == "" {
			return false
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	if host == "" || strings.ContainsAny(host, "[]") || (!strings.HasPrefix(hostport, "[") && strings.Contains(host, ":")) {
		return false
	}
	return IsLoopback(host)
}

// IsLoopback reports whether host, a name or an address without a port,
// names this machine only.
func IsLoopback(host string) bool {
	if inner, ok := strings.CutPrefix(host, "["); ok {
		if host, ok = strings.CutSuffix(inner, "]"); !ok {
			return false
		}
	}
	if strings.ContainsAny(host, "[]") {
		return false
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
