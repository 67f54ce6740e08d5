#!/bin/sh
# Context in the top-level additionalContext field.
echo '{"hookSpecificOutput":{"hookEventName":"SessionStart"},"additionalContext":"camel context"}'
