package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/reprise-dev/reprise/web"
	"github.com/reprise-dev/reprise/web/internal/fixture"
)

func TestDump(t *testing.T) {
	s := fixture.New(t)
	srv := httptest.NewServer(web.New(s.Engine, web.Options{}))
	defer srv.Close()
	for _, p := range []string{"/sessions", "/sessions/" + s.Demo.Bugfix, "/agents/ci", "/agents/crashy", "/audit", "/events", "/api/agents/ci", "/api/sessions/" + s.Demo.Bugfix} {
		res, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		os.WriteFile("/tmp/web15dump"+string([]byte{byte('a' + len(p)%26)})+".html", b, 0o644)
		t.Logf("%s %d %d bytes", p, res.StatusCode, len(b))
	}
}
