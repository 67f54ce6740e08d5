#!/bin/sh
# A Stop hook that never lets the agent stop. It appends its stdin to the
# side file $1, so the test sees every stop_hook_active it was given.
line=$(cat)
printf '%s\n' "$line" >> "$1"
echo '{"decision": "block", "reason": "the tests are not green yet"}'
