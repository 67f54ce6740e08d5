#!/bin/sh
# A SessionStart hook: reads the hook input from stdin and returns context
# naming the session, the source and the working directory.
input=$(cat)
session=$(printf '%s' "$input" | sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')
source=$(printf '%s' "$input" | sed -n 's/.*"source":"\([^"]*\)".*/\1/p')
echo "hook saw session $session, source $source, in $(pwd)"
