package projection

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reprise-dev/reprise/schema"
)

func TestTranscriptFromEveryEntry(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 50 {
		c := NewConversation("s")
		for i := range r.IntN(40) {
			for range r.IntN(3) * r.IntN(2) {
				c.Kept = append(c.Kept, KeptRecord{Before: len(c.Messages), Record: fmt.Appendf(nil, `{"k":%d}`, i)})
			}
			c.Messages = append(c.Messages, schema.Message{UUID: fmt.Sprint(i), Role: "user", Content: []schema.Block{{Type: "text", Text: "x"}}})
		}
		for range r.IntN(3) {
			c.Kept = append(c.Kept, KeptRecord{Before: len(c.Messages), Record: []byte(`{"end":1}`)})
		}
		var all []string
		c.Transcript(0, func(l []byte) error { all = append(all, string(l)); return nil })
		if len(all) != c.Entries() {
			t.Fatalf("round %d: %d lines for %d entries", round, len(all), c.Entries())
		}
		for from := range c.Entries() + 2 {
			var got []string
			c.Transcript(from, func(l []byte) error { got = append(got, string(l)); return nil })
			if want := all[min(from, len(all)):]; !slices.Equal(got, want) {
				t.Fatalf("round %d: Transcript(%d) = %d lines, want %d", round, from, len(got), len(want))
			}
		}
	}
}
