#!/bin/sh
# Prints to both streams and exits with the code given as $1.
echo "stdout is ignored on failure"
echo "  something went wrong  " >&2
exit "$1"
