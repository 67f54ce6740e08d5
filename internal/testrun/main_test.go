package main

import (
	"strings"
	"testing"
)

// The summary prints a line a package, the output of failed tests only,
// and at its end the skipped tests grouped by the reason they gave,
// without go test's own lines and the file:line of t.Skip.
func TestSummaryGroupsSkipsByReason(t *testing.T) {
	const run = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestPasses"}
{"Action":"output","Package":"m/a","Test":"TestPasses","Output":"=== RUN   TestPasses\n"}
{"Action":"output","Package":"m/a","Test":"TestPasses","Output":"    a_test.go:3: chatter of a passing test\n"}
{"Action":"pass","Package":"m/a","Test":"TestPasses","Elapsed":0.1}
{"Action":"output","Package":"m/a","Test":"TestOnPostgres","Output":"=== RUN   TestOnPostgres\n"}
{"Action":"output","Package":"m/a","Test":"TestOnPostgres","Output":"    pg_test.go:9: REPRISE_TEST_POSTGRES is not set\n"}
{"Action":"output","Package":"m/a","Test":"TestOnPostgres","Output":"--- SKIP: TestOnPostgres (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestOnPostgres"}
{"Action":"pass","Package":"m/a","Elapsed":1.5}
{"Action":"output","Package":"m/b","Test":"TestRows","Output":"    rows_test.go:12: REPRISE_TEST_POSTGRES is not set\n"}
{"Action":"skip","Package":"m/b","Test":"TestRows"}
{"Action":"output","Package":"m/b","Test":"TestBrowser","Output":"    browser_test.go:49: no browser\n"}
{"Action":"skip","Package":"m/b","Test":"TestBrowser"}
{"Action":"output","Package":"m/b","Test":"TestBreaks","Output":"    b_test.go:7: got 1, want 2\n"}
{"Action":"fail","Package":"m/b","Test":"TestBreaks","Elapsed":0.2}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t2.001s\n"}
{"Action":"fail","Package":"m/b","Elapsed":2}
{"Action":"skip","Package":"m/c"}
`
	var out strings.Builder
	s := newSummary(&out)
	if err := s.read(strings.NewReader(run)); err != nil {
		t.Fatal(err)
	}
	s.report()
	want := "ok  \tm/a\t1.5s\n" +
		"    b_test.go:7: got 1, want 2\n" +
		"FAIL\tm/b\t2.0s\n" +
		"?   \tm/c\t[no test files]\n" +
		"\n1 packages passed, 1 failed; 3 tests skipped, for these reasons:\n" +
		"\nREPRISE_TEST_POSTGRES is not set\n\tm/a: TestOnPostgres\n\tm/b: TestRows\n" +
		"\nno browser\n\tm/b: TestBrowser\n"
	if out.String() != want {
		t.Errorf("the summary is\n%s\nwant\n%s", out.String(), want)
	}
	if s.failed != 1 {
		t.Errorf("%d packages failed; want 1", s.failed)
	}
}
