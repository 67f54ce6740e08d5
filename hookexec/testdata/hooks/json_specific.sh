#!/bin/sh
# Context in hookSpecificOutput wins over the top-level fields.
cat <<'JSON'
{
  "hookSpecificOutput": {
    "hookEventName": "SessionStart",
    "additionalContext": "specific context"
  },
  "additionalContext": "top-level context"
}
JSON
