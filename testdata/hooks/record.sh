#!/bin/sh
# Appends its first argument and its stdin, as one line, to the side file $2,
# so the test observes every run and exactly what the hook received. Hooks
# run in parallel, so the line is written with a single write.
line="$1 $(cat)"
printf '%s\n' "$line" >> "$2"
