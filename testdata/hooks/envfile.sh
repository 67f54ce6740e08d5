#!/bin/sh
# Persists a variable for the host, as Claude Code hooks do.
echo 'export REPRISE_TEST_VAR=from-hook' >> "$CLAUDE_ENV_FILE"
