package main

import (
	"bytes"
	"testing"
)

func TestRenderProgress(t *testing.T) {
	for _, tc := range []struct {
		read, total int64
		want        string
	}{
		{0, 200 << 20, "importing f   0% [                              ] 0.0/200.0 MB"},
		{50 << 20, 200 << 20, "importing f  25% [=======                       ] 50.0/200.0 MB"},
		{200 << 20, 200 << 20, "importing f 100% [==============================] 200.0/200.0 MB"},
		{300 << 20, 200 << 20, "importing f 100% [==============================] 200.0/200.0 MB"},
		{3 << 20, 0, "importing f  3.0 MB"},
	} {
		if got := renderProgress("importing f", tc.read, tc.total); got != tc.want {
			t.Errorf("renderProgress(%d, %d) = %q, want %q", tc.read, tc.total, got, tc.want)
		}
	}
	// Not a terminal: no bar.
	if p := newProgress(new(bytes.Buffer), "x", 10); p != nil {
		t.Fatal("a bar on a buffer")
	}
}
