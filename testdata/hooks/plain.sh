#!/bin/sh
# Prints plain text: the trimmed stdout becomes context.
cat >/dev/null
printf '  plain context  \n\n'
