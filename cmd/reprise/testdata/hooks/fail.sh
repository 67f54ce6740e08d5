#!/bin/sh
# A hook that fails: exit code 3 and a line on stderr.
cat >/dev/null
echo "no context today" >&2
exit 3
