#!/bin/sh
# Reads transcript_path from stdin and reports the transcript's length and
# the text of its last line (a user message with plain string content).
path=$(sed -n 's/.*"transcript_path":"\([^"]*\)".*/\1/p')
lines=$(wc -l < "$path" | tr -d ' ')
last=$(tail -n 1 "$path" | sed -n 's/.*"content":"\([^"]*\)".*/\1/p')
echo "transcript has $lines lines, last: $last"
