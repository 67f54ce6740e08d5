#!/bin/sh
# Starts like JSON but is not: it counts as plain text.
echo '{not json, just braces'
