#!/bin/sh
# Context in the top-level additional_context field.
echo '{"additionalContext":"","additional_context":"snake context"}'
