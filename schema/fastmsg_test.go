package schema

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reprise-dev/reprise/eventlog"
)

func TestFastMessageEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	str := func() string { return strings.Repeat("x", []int{0, 1, 31, 32, 300, 70000}[r.IntN(6)]) }
	for i := 0; i < randomMessages(2000); i++ {
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
		if r.IntN(2) == 0 {
			m.ToolUseResult = []byte(str())
		}
		if r.IntN(2) == 0 {
			m.Attachment = []byte(str())
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

// AppendMessageRecords makes, after the records already there, the
// records NewRecord makes one by one, and a payload of one cannot grow
// into the next's bytes.
func TestAppendMessageRecordsAsNewRecord(t *testing.T) {
	ms := []MessageAppended{
		{Message: Message{UUID: "u1", Role: "user", Content: []Block{{Type: "text", Text: "hello"}}}},
		{Message: Message{UUID: "u2", ParentUUID: "u1", Role: "assistant", Content: []Block{{Type: "text", Text: strings.Repeat("y", 500)}}}},
		{Message: Message{UUID: "u3", ParentUUID: "u2", Role: "user", IsMeta: true, Attachment: []byte(`{"a":1}`)}},
	}
	first, err := NewRecord("other", &SessionCreated{ID: "s"}, 7, "")
	if err != nil {
		t.Fatal(err)
	}
	recs := AppendMessageRecords([]eventlog.Record{first}, "session/s", ms, 42)
	if len(recs) != 4 || !reflect.DeepEqual(recs[0], first) {
		t.Fatalf("records %v: want the first kept and three more", recs)
	}
	for i := range ms {
		want, err := NewRecord("session/s", &ms[i], 42, "")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(recs[i+1], want) {
			t.Errorf("record %d = %+v, want %+v", i, recs[i+1], want)
		}
	}
	next := slices.Clone(recs[2].Payload)
	_ = append(recs[1].Payload, 0xff)
	if !bytes.Equal(recs[2].Payload, next) {
		t.Error("appending to a payload changed the next one")
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
	if got, want := fields(Message{}), []string{"UUID", "ParentUUID", "Role", "IsMeta", "Summary", "Timestamp", "Content", "Record", "ToolUseResult", "Attachment"}; !slices.Equal(got, want) {
		t.Fatalf("Message has fields %v; update appendMessageAppended, then this list (%v)", got, want)
	}
	if got, want := fields(Block{}), []string{"Type", "Text", "Raw"}; !slices.Equal(got, want) {
		t.Fatalf("Block has fields %v; update appendMessageAppended, then this list (%v)", got, want)
	}
	if got, want := fields(MessageAppended{}), []string{"Message"}; !slices.Equal(got, want) {
		t.Fatalf("MessageAppended has fields %v; update appendMessageAppended", got)
	}
}

// The hand-written decoder either decodes a payload exactly as the msgpack
// library does or declines it: for messages of every shape, in the form
// this build writes, in the library's own encoding, and with bytes
// changed, cut short or added.
func TestFastMessageDecoding(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	str := func() string {
		return []string{"", "user", "assistant", "text", "x", strings.Repeat("y", 31), strings.Repeat("z", 300), strings.Repeat("w", 70000)}[r.IntN(8)]
	}
	decoded := 0
	check := func(i int, data []byte) {
		t.Helper()
		var fast MessageAppended
		if !decodeMessageAppended(data, &fast) {
			return
		}
		decoded++
		var want MessageAppended
		if err := msgpack.Unmarshal(data, &want); err != nil {
			t.Fatalf("message %d: the fast decoder accepted what msgpack refuses: %v", i, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("message %d: decoded\n%#v\nmsgpack decodes\n%#v", i, fast, want)
		}
	}
	n := randomMessages(3000)
	for i := range n {
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
		if r.IntN(2) == 0 {
			m.ToolUseResult = []byte(str())
		}
		if r.IntN(2) == 0 {
			m.Attachment = []byte(str())
		}
		p := &MessageAppended{Message: m}
		data := appendMessageAppended(nil, p)
		var fast MessageAppended
		if !decodeMessageAppended(data, &fast) {
			t.Fatalf("message %d: the fast decoder declined what this build writes", i)
		}
		check(i, data)
		lib, _ := msgpack.Marshal(map[string]any{"msg": map[string]any{"uuid": m.UUID, "role": m.Role, "ts": m.Timestamp, "content": m.Content}})
		check(i, lib)
		if len(data) < 4096 {
			for range 20 {
				bad := bytes.Clone(data)
				switch r.IntN(3) {
				case 0:
					bad[r.IntN(len(bad))] = byte(r.IntN(256))
				case 1:
					bad = bad[:r.IntN(len(bad))]
				default:
					bad = append(bad, byte(r.IntN(256)))
				}
				check(i, bad)
			}
		}
	}
	if decoded < n {
		t.Fatalf("only %d payloads decoded by hand", decoded)
	}
}

// randomMessages returns how many random messages a test of the fast
// codec tries: n, or a tenth of n under the race detector or -short. The
// codec runs on one goroutine, so the detector has nothing to find in
// these tests, and the messages of up to megabytes each cost it minutes:
// .ci/run runs them without it, at n, as go test does without -race. The
// quick run's tenth is 20 seconds of CPU less.
func randomMessages(n int) int {
	if raceDetector || testing.Short() {
		return n / 10
	}
	return n
}
