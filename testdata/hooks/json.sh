#!/bin/sh
# Answers in Claude Code's JSON shape.
cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"json context"}}'
