#!/bin/sh
# A SessionEnd hook: appends its stdin, one line, to the file named by its
# first argument.
cat >>"$1"
echo >>"$1"
