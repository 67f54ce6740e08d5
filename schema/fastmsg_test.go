package schema

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestFastMessageEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	str := func() string { return strings.Repeat("x", []int{0, 1, 31, 32, 300, 70000}[r.IntN(6)]) }
	for i := 0; i < 2000; i++ {
		m := Message{UUID: str(), ParentUUID: str(), Role: str(), IsMeta: r.IntN(2) == 0, Summary: r.IntN(2) == 0,
			Timestamp: int64(r.Uint64())}
		if r.IntN(4) > 0 {
			m.Content = []Block{}
			for range r.IntN(20) {
				m.Content = append(m.Content, Block{Type: str(), Text: str(), Raw: []byte(str())})
			}
		}
		if r.IntN(2) == 0 {
			m.Record = []byte(str())
		}
		p := &MessageAppended{Message: m}
		want, _ := msgpack.Marshal(p)
		if got := appendMessageAppended(nil, p); !bytes.Equal(got, want) {
			t.Fatalf("message %d differs", i)
		}
		if len(want) > messageSize(&m) {
			t.Fatalf("message %d takes %d bytes, more than messageSize's %d", i, len(want), messageSize(&m))
		}
	}
}

// appendMessageAppended knows every field of Message and Block by hand. A
// field added to either must be added there too, or it would be silently
// dropped on write; this test names the fields it knows.
func TestFastMessageEncodingKnowsEveryField(t *testing.T) {
	fields := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			out = append(out, rt.Field(i).Name)
		}
		return out
	}
	if got, want := fields(Message{}), []string{"UUID", "ParentUUID", "Role", "IsMeta", "Summary", "Timestamp", "Content", "Record"}; !slices.Equal(got, want) {
		t.Fatalf("Message has fields %v; update appendMessageAppended, then this list (%v)", got, want)
	}
	if got, want := fields(Block{}), []string{"Type", "Text", "Raw"}; !slices.Equal(got, want) {
		t.Fatalf("Block has fields %v; update appendMessageAppended, then this list (%v)", got, want)
	}
	if got, want := fields(MessageAppended{}), []string{"Message"}; !slices.Equal(got, want) {
		t.Fatalf("MessageAppended has fields %v; update appendMessageAppended", got)
	}
}
