package reprise_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/internal/testkit"
	"github.com/reprise-dev/reprise/schema"
)

// lines returns the lines of the file at path, none when it is missing.
func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(data)); s != "" {
		return strings.Split(s, "\n")
	}
	return nil
}

// waitFor waits up to ten seconds for the file at path to exist.
func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// A Fire while a restore's SessionStart hook runs fails with ErrAgentBusy,
// running nothing; once the restore is done, the same Fire runs its hook.
func TestFireDuringARestoreIsBusy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	e, a := fireEngine(t, dir, `{"hooks": {"Notification": [{"hooks": [{"type": "command",
		"command": "cat >> '`+runs+`'; echo >> '`+runs+`'; echo '{\"systemMessage\": \"noted\"}'"}]}]}}`)
	testkit.Session(t, e, "b", dir, "other")
	inStart, release := make(chan struct{}), make(chan struct{})
	var once, letOnce sync.Once
	let := func() { letOnce.Do(func() { close(release) }) }
	if err := e.Hooks().OnSessionStart("hold", "", func(context.Context, hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		held := false
		once.Do(func() { held = true })
		if held {
			close(inStart)
			<-release
		}
		return hookexec.SessionStartOutput{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	restored := make(chan error, 1)
	go func() {
		_, err := a.Restore(ctx, "b")
		restored <- err
	}()
	<-inStart

	in := json.RawMessage(`{"message": "are you there"}`)
	type result struct {
		f   *reprise.Fired
		err error
	}
	fired := make(chan result, 1)
	go func() {
		f, err := a.Fire(ctx, schema.HookNotification, "n1", in)
		fired <- result{f, err}
	}()
	select {
	case r := <-fired:
		if !errors.Is(r.err, reprise.ErrAgentBusy) {
			t.Errorf("Fire during a restore: %+v, %v; want ErrAgentBusy", r.f, r.err)
		}
		if n := len(lines(t, runs)); n != 0 {
			t.Errorf("Fire during a restore ran its hook %d times", n)
		}
	case <-time.After(3 * time.Second):
		t.Errorf("Fire during a restore waited for it instead of failing with ErrAgentBusy")
		let()
		if r := <-fired; r.err != nil {
			t.Logf("the waiting Fire, once the restore was done: %v", r.err)
		}
	}
	let()
	if err := <-restored; err != nil {
		t.Fatalf("the restore: %v", err)
	}
	if cur := a.Current(); cur != "b" {
		t.Fatalf("after the restore the current session is %q", cur)
	}

	f, err := a.Fire(ctx, schema.HookNotification, "n1", in)
	if err != nil {
		t.Fatalf("Fire after the restore: %v", err)
	}
	if t.Failed() {
		return // the Fire that waited ran it: what follows says nothing more
	}
	if f.AlreadyRecorded || f.SystemMessage != "noted" || len(f.Outcomes) != 1 || f.Outcomes[0].Status != schema.HookOK {
		t.Fatalf("Fire after the restore: %+v", f)
	}
	ran := lines(t, runs)
	if len(ran) != 1 {
		t.Fatalf("the hook ran %d times after the restore", len(ran))
	}
	var stdin map[string]any
	if err := json.Unmarshal([]byte(ran[0]), &stdin); err != nil {
		t.Fatal(err)
	}
	if stdin["session_id"] != "b" || stdin["message"] != "are you there" {
		t.Fatalf("stdin: %s", ran[0])
	}
}

// Fires of other ids go on while one fire's command hook is held: they
// run their hooks and are not refused with ErrAgentBusy, and the held one
// ends as its hook says. A fire of the held id meanwhile is ErrAgentBusy.
func TestFireBesideAnotherFiresHooks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	started, gate, runs := filepath.Join(dir, "started"), filepath.Join(dir, "gate"), filepath.Join(dir, "runs")
	// The held hook gives up after ten seconds, so a failing test ends.
	_, a := fireEngine(t, dir, `{"hooks": {"Notification": [
		{"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "touch '`+started+`'; i=0; while [ ! -e '`+gate+`' ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; echo '{\"systemMessage\": \"held\"}'"}]},
		{"matcher": "auth_success", "hooks": [{"type": "command", "command": "echo ran >> '`+runs+`'; echo '{\"systemMessage\": \"quick\"}'"}]}]}}`)
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	held := make(chan error, 1)
	go func() {
		f, err := a.Fire(ctx, schema.HookNotification, "held", json.RawMessage(`{"message": "m", "notification_type": "idle_prompt"}`))
		if err == nil && f.SystemMessage != "held" {
			err = errors.New("the held fire's systemMessage: " + f.SystemMessage)
		}
		held <- err
	}()
	waitFor(t, started)

	for i, id := range []string{"quick-1", "quick-2"} {
		f, err := a.Fire(ctx, schema.HookNotification, id, json.RawMessage(`{"message": "m", "notification_type": "auth_success"}`))
		if errors.Is(err, reprise.ErrAgentBusy) {
			t.Fatalf("Fire %s beside a fire whose hook runs: %v; want it run", id, err)
		}
		if err != nil || f.AlreadyRecorded || f.SystemMessage != "quick" {
			t.Fatalf("Fire %s beside a fire whose hook runs: %+v, %v", id, f, err)
		}
		if n := len(lines(t, runs)); n != i+1 {
			t.Fatalf("after fire %s the quick hook ran %d times", id, n)
		}
	}
	if _, err := a.Fire(ctx, schema.HookNotification, "held", json.RawMessage(`{"message": "m", "notification_type": "idle_prompt"}`)); !errors.Is(err, reprise.ErrAgentBusy) {
		t.Errorf("Fire of the id whose hook runs: %v; want ErrAgentBusy", err)
	}
	select {
	case err := <-held:
		t.Fatalf("the held fire ended before its hook was let go: %v", err)
	default:
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}

// MessageDisplay runs and is not recorded: fired twice with one id, its
// command hook runs twice, each time with the delta on stdin, and its
// displayContent comes back, while the log gains nothing; the id stays
// free for a recorded fire.
func TestMessageDisplayRunsEachTimeAndRecordsNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	e, a := fireEngine(t, dir, `{"hooks": {
		"MessageDisplay": [{"hooks": [{"type": "command", "command": "cat >> '`+runs+`'; echo >> '`+runs+`'; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"MessageDisplay\", \"displayContent\": \"shown\"}}'"}]}],
		"Notification": [{"hooks": [{"type": "command", "command": "true"}]}]}}`)
	before := testkit.Events(t, e.Store())
	for i, delta := range []string{"Hel", "lo"} {
		fields, _ := json.Marshal(map[string]any{"turn_id": "t1", "message_id": "m1", "index": i, "final": i == 1, "delta": delta})
		f, err := a.Fire(ctx, schema.HookMessageDisplay, "d1", fields)
		if err != nil {
			t.Fatalf("MessageDisplay %d: %v", i, err)
		}
		if f.AlreadyRecorded || string(f.Specific) != `{"displayContent":"shown"}` || len(f.Outcomes) != 1 || f.Outcomes[0].Status != schema.HookOK {
			t.Fatalf("MessageDisplay %d: %+v", i, f)
		}
		ran := lines(t, runs)
		if len(ran) != i+1 {
			t.Fatalf("after MessageDisplay %d the hook ran %d times", i, len(ran))
		}
		var stdin map[string]any
		if err := json.Unmarshal([]byte(ran[i]), &stdin); err != nil {
			t.Fatal(err)
		}
		if stdin["hook_event_name"] != "MessageDisplay" || stdin["session_id"] != "s" || stdin["delta"] != delta || stdin["index"] != float64(i) {
			t.Fatalf("stdin of MessageDisplay %d: %s", i, ran[i])
		}
	}
	after := testkit.Events(t, e.Store())
	if len(after) != len(before) {
		t.Fatalf("MessageDisplay appended %d events: %v", len(after)-len(before), after[len(before):])
	}
	f, err := a.Fire(ctx, schema.HookNotification, "d1", json.RawMessage(`{"message": "m"}`))
	if err != nil || f.AlreadyRecorded {
		t.Fatalf("a Notification under the id MessageDisplay took: %+v, %v", f, err)
	}
}
