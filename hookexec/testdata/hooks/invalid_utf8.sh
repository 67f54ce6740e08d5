#!/bin/sh
# Writes bytes that are not valid UTF-8.
printf 'bad \377\376 bytes \303 end'
