package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/hookexec"
	"github.com/reprise-dev/reprise/turn"
)

// apiError is an error with the status and the code it answers.
type apiError struct {
	status int
	code   string
	msg    string
	busy   string // with agent_busy: what holds the agent, when known
}

func (e *apiError) Error() string { return e.msg }

// errorJSON is the body of an error answer: the Error schema.
type errorJSON struct {
	Error  string `json:"error"`
	Code   string `json:"code"`
	Status int    `json:"status"`
	Busy   string `json:"busy,omitempty"`
}

// StatusClientClosed is the status of a request whose client went away
// before its answer: nobody reads it, but the log of the server says why
// the action stopped.
const StatusClientClosed = 499

// badRequest is the error of a body the route cannot use.
func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: "bad_request", msg: fmt.Sprintf(format, args...)}
}

// codes gives each sentinel error of the library its status and code, in
// the order classify tries them: one code per condition.
var codes = []struct {
	err    error
	status int
	code   string
}{
	{reprise.ErrInvalidID, http.StatusBadRequest, "invalid_id"},
	{reprise.ErrInvalidMessage, http.StatusBadRequest, "invalid_message"},
	{reprise.ErrBadReason, http.StatusBadRequest, "bad_reason"},
	{reprise.ErrBadTool, http.StatusBadRequest, "bad_tool"},
	{reprise.ErrBadFire, http.StatusBadRequest, "bad_fire"},
	{reprise.ErrBadSubagent, http.StatusBadRequest, "bad_subagent"},
	{reprise.ErrEmptyToolUseID, http.StatusBadRequest, "invalid_id"},
	{hookexec.ErrHookIDInUse, http.StatusBadRequest, "bad_request"},
	{reprise.ErrSessionNotFound, http.StatusNotFound, "session_not_found"},
	{reprise.ErrMessageNotFound, http.StatusNotFound, "message_not_found"},
	{reprise.ErrToolUseNotFound, http.StatusNotFound, "tool_use_not_found"},
	{reprise.ErrAgentBusy, http.StatusConflict, "agent_busy"},
	{reprise.ErrSessionExists, http.StatusConflict, "session_exists"},
	{reprise.ErrSessionDeleted, http.StatusConflict, "session_deleted"},
	{reprise.ErrSessionInUse, http.StatusConflict, "session_in_use"},
	{reprise.ErrNoCurrentSession, http.StatusConflict, "no_current_session"},
	{reprise.ErrToolCallsOpen, http.StatusConflict, "tool_calls_open"},
	{reprise.ErrDuplicateToolUse, http.StatusConflict, "duplicate_tool_use"},
	{reprise.ErrToolNotDecided, http.StatusConflict, "tool_not_decided"},
	{reprise.ErrToolNotAllowed, http.StatusConflict, "tool_not_allowed"},
	{reprise.ErrToolNotAsked, http.StatusConflict, "tool_not_asked"},
	{reprise.ErrCompactionBlocked, http.StatusConflict, "compaction_blocked"},
	{reprise.ErrImportUnfinished, http.StatusConflict, "import_unfinished"},
	{reprise.ErrNestedSubagent, http.StatusConflict, "nested_subagent"},
	{turn.ErrBadStep, http.StatusBadRequest, "bad_step"},
	{turn.ErrUnfinished, http.StatusConflict, "turn_unfinished"},
	{reprise.ErrNoDirectory, http.StatusUnprocessableEntity, "no_directory"},
	{reprise.ErrInterrupted, StatusClientClosed, "interrupted"},
	{context.Canceled, StatusClientClosed, "interrupted"},
}

// classify gives err, the error of a request under ctx, its status and
// code.
func classify(ctx context.Context, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return &apiError{status: c.status, code: c.code, msg: err.Error()}
		}
	}
	if ctx.Err() != nil {
		return &apiError{status: StatusClientClosed, code: "interrupted", msg: err.Error()}
	}
	return &apiError{status: http.StatusInternalServerError, code: "internal", msg: err.Error()}
}

// busy adds to an ErrAgentBusy what holds agent a: the action in this
// process, else what its log shows in flight.
func busy(a *reprise.Agent, err error) error {
	if !errors.Is(err, reprise.ErrAgentBusy) {
		return err
	}
	return &apiError{status: http.StatusConflict, code: "agent_busy", msg: err.Error(), busy: a.Doing()}
}

// writeError answers e as an Error object.
func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(errorJSON{Error: e.msg, Code: e.code, Status: e.status, Busy: e.busy})
}
