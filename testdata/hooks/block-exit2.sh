#!/bin/sh
# A Stop hook that blocks the old way: exit 2 with the reason on stderr.
cat >/dev/null
echo "run the linter first" >&2
exit 2
