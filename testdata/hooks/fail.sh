#!/bin/sh
# Exits with the code given as $1, explaining itself on stderr.
cat >/dev/null
echo "this context must be ignored"
echo "failing on purpose with $1" >&2
exit "$1"
