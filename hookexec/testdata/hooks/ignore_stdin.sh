#!/bin/sh
# Never reads its stdin.
echo "did not read stdin"
