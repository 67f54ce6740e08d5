package reprise_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
)

// A host keeps two conversations, starts on one and switches to the other.
// The SessionEnd hook runs on the session being left, then the SessionStart
// hook on the target, whose context arrives as a meta user message.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "reprise-example-")
	defer os.RemoveAll(dir)

	e, err := reprise.Open(filepath.Join(dir, "sessions.db"), reprise.Options{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	e.Hooks().OnSessionEnd("log-end", "", func(ctx context.Context, in hookexec.SessionEndInput) (hookexec.SessionEndOutput, error) {
		fmt.Println("SessionEnd", in.SessionID, in.Reason)
		return hookexec.SessionEndOutput{}, nil
	})
	e.Hooks().OnSessionStart("context", "startup|resume", func(ctx context.Context, in hookexec.SessionStartInput) (hookexec.SessionStartOutput, error) {
		fmt.Println("SessionStart", in.SessionID, in.Source)
		return hookexec.SessionStartOutput{AdditionalContext: "tests pass on main"}, nil
	})

	e.CreateSession(ctx, "design", dir)
	e.CreateSession(ctx, "bugfix", dir)
	e.Append(ctx, "bugfix", reprise.Text("user", "Why does the build fail?"))

	agent, _ := e.Agent(ctx, "ide")
	agent.Start(ctx, "design")
	r, err := agent.Restore(ctx, "bugfix")
	if err != nil {
		panic(err)
	}
	msgs, _ := e.Conversation(ctx, "bugfix")
	last := msgs[len(msgs)-1]
	fmt.Println("current:", agent.Current(), "from:", r.From)
	fmt.Printf("injected (meta=%v): %q\n", last.IsMeta, last.Content[0].Text)
	// Output:
	// SessionStart design startup
	// SessionEnd design resume
	// SessionStart bugfix resume
	// current: bugfix from: design
	// injected (meta=true): "<system-reminder>\nSessionStart hook additional context: tests pass on main\n</system-reminder>"
}

// Messages can be buffered cheaply and written in one atomic append by Save,
// or by the restore that leaves the session.
func ExampleEngine_Save() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "reprise-example-")
	defer os.RemoveAll(dir)
	e, _ := reprise.Open(filepath.Join(dir, "sessions.db"), reprise.Options{})
	defer e.Close()

	e.CreateSession(ctx, "chat", "")
	e.Buffer(ctx, "chat", reprise.Text("user", "hello"))
	e.Buffer(ctx, "chat", reprise.Text("assistant", "hi there"))
	n, _ := e.Save(ctx, "chat")
	msgs, _ := e.Conversation(ctx, "chat")
	fmt.Println(n, "saved;", msgs[1].ParentUUID == msgs[0].UUID)
	// Output: 2 saved; true
}
