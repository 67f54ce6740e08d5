#!/bin/sh
# Saves its stdin to the file $1 and answers with the session_id field.
cat > "$1"
id=$(sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p' "$1")
echo "session is $id"
