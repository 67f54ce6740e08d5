// Package scenario runs the lifecycle's spec: the scenario files of
// testdata/scenarios, each a script of what a host does, with what the log
// must then hold. They run on the in-memory twins of the Engine's
// boundary (a memory store, memory files, a runner that plays each hook's
// scripted outcome, a clock and ids that count); files named real-*.txt
// run a second time with real hook commands and files on disk, and must
// give the same output, which is how the twin is shown to keep the real
// runner's contract.
//
// # The file grammar
//
// A file is read by github.com/cockroachdb/datadriven. Each test case is a
// directive line, optional input lines, a separator and the expected
// output:
//
//	# comments and blank lines between cases are kept
//	command arg... key=value key=(a value with spaces)
//	input text, for commands that take text
//	----
//	expected output
//
// When the expected output holds blank lines, the separator is doubled
// (a line "----" after the directive and another after the output), as
// datadriven writes it. Arguments without "=" are positional, in order;
// "" stands for the empty string. A value in parentheses may hold spaces;
// a comma in it is kept, without the spaces after it. `go test -run TestScenarios -rewrite .`
// rewrites the expected output from what the commands printed.
//
// The output of a command is what it appended and the hooks it ran, in the
// order they happened, then what it printed. Each append is one block,
// separated from the next by a blank line, so a reader sees what is
// written together atomically. An event's line is its type, for a
// session's event the session, and what `reprise log` prints of it; a hook
// run is an indented "run" line. An error prints as "error: ...", an
// action that changed nothing as "(nothing to do)", a command with no
// output as "(no output)".
//
// # Commands
//
// Sessions and messages:
//
//	session ID [cwd=DIR]               create a session
//	append ID ROLE                     append a message (text as input) [meta=true] [blocks=true: content blocks, JSON]
//	buffer ID ROLE                     buffer a message (text as input) [meta=true] [blocks=true]
//	save ID                            save the buffered messages
//	conversation ID                    print the conversation
//	transcript ID                      print the transcript file's length and last line
//	delete ID                          delete a session (a tombstone)
//	vacuum                             remove what deleted sessions left
//	audit                              audit the log
//
// Hooks:
//
//	hook EVENT [opts]                  register a hook whose command is the input
//	unhook SESSION HOOKID              remove a session-scoped hook
//	hooks SESSION [event=EVENT]        list a session's scoped hooks
//
// Agents:
//
//	agent NAME                         open an agent (rolling forward) and print its current session
//	start NAME ID [prompt=TEXT] [resume=true]   startup restore; resume=true: at process start, source resume
//	restore NAME ID                    runtime restore
//	new NAME ID [cwd=DIR] [prompt=T]   a fresh session
//	clear NAME                         end the current session and start afresh
//	fork NAME PARENT [upto=UUID]       continue from a copy of PARENT
//	compact NAME [trigger=T] [instructions=T] [summarize=true|fail]   compact, the summary as input
//	                                   (summarize: the host makes it after the PreCompact hooks)
//	end NAME REASON [final=T] [error=T]         end the current session
//	stop NAME [reason=R]               the Stop hooks at the end of a turn
//	prompt NAME                        submit the input as the user's prompt
//	restored NAME                      what the last restore's hooks returned
//	reopen [stopcap=N]                 a new Engine over the same store, as a new process
//	tool NAME TOOL ID [permission=P]   PreToolUse on a call, its input (JSON) as input
//	tool-result NAME ID [error=TEXT]   PostToolUse on a call, its output (JSON) as input
//	tool-answer NAME ID allow|refuse [refusal=TEXT]   the user's answer to a call left to ask
//	tool-batch NAME                    PostToolBatch of the last answer, as before the next model request
//	fire NAME EVENT ID                 run the hooks of an event without steps of its own once under
//	                                   fire id ID, the event's own fields (a JSON object) as input
//	subagent NAME ID [type=T]          start the subagent of Agent call ID, its prompt as input;
//	                                   prints its agent, which later commands name
//
// Turns (package turn):
//
//	turn NAME                          where the turn on the current session stands, from the log
//	run-turn NAME [prompt=T] [repeat=TOOLS] [permission=P] [ask=allow|refuse] [tries=N]
//	                                   drive a turn (Run with prompt, else Resume); the model's
//	                                   answers as input, a line per request: text, use:ID:TOOL,
//	                                   fail (a failed request) or fail:KIND (a FinalError)
//
// Every command also takes the faults: crash-after=TYPE (the process dies
// right after the append that holds an event of TYPE; only reopen may
// follow), cancel-after=TYPE (the command's context is cancelled then),
// fail=TYPE (that append fails once, as a full disk would) and
// delete-before=TYPE:SESSION (another host deletes SESSION just before
// that append).
//
// Each command is one handler of World, in the file of its concept, with
// its doc and an example.
package scenario
