#!/bin/sh
# Writes 12000 two-byte characters.
awk 'BEGIN { for (i = 0; i < 12000; i++) printf "é" }'
