#!/bin/sh
# Reports the Claude Code variables and its working directory, and writes to
# the env file when there is one.
if [ -n "$CLAUDE_ENV_FILE" ]; then
	echo "export FROM_HOOK=1" >> "$CLAUDE_ENV_FILE"
fi
printf 'project=%s\nplugin=%s\nenvfile=%s\nenvfile_set=%s\npwd=%s\n' \
	"$CLAUDE_PROJECT_DIR" "$CLAUDE_PLUGIN_ROOT" "$CLAUDE_ENV_FILE" \
	"${CLAUDE_ENV_FILE+yes}" "$(pwd -P)"
