#!/bin/sh
# Writes 5 MiB to stdout and 2 MiB to stderr.
head -c 2097152 /dev/zero | tr '\0' 'e' >&2
head -c 5242880 /dev/zero | tr '\0' 'x'
