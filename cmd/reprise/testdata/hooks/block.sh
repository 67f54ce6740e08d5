#!/bin/sh
# A Stop hook that asks the agent to keep going.
cat >/dev/null
echo '{"decision": "block", "reason": "tests are still red"}'
