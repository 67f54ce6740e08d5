#!/bin/sh
# Writes 5 MB to stdout.
head -c 5000000 /dev/zero | tr '\0' 'x'
