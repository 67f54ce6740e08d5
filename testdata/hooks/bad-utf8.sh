#!/bin/sh
# Writes bytes that are not UTF-8 around some text.
printf '\377\376 latin1 caf\351 \n'
